/**
 * A workspace agent process for the binding's tests. It prints one JSON line per runner event
 * on stdout ("ready" first), appends every start of a phase to an effects file tagged with
 * (task_id, epoch), and behaves as `--mode` says:
 *   ok     finish after --work-ms (default 0–2 ms at random)
 *   hang   never finish (to be killed)
 *   throw  fail with a retryable error
 *   block  block the event loop for --work-ms (no lease renewal meanwhile), then finish
 * Usage: agent.testkit.ts --workspace DIR --agent-id ID --phases a,b [--mode ok] [--work-ms N]
 *        [--effects FILE] [--no-reap] [--poll-ms N] [--concurrency N]
 */
import { closeSync, fdatasyncSync, openSync, writeSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { runWorkspaceAgent } from './runner.ts';
import type { PhaseContext, PhaseOutcome } from './phase.ts';

const { values } = parseArgs({
  options: {
    workspace: { type: 'string' },
    'agent-id': { type: 'string' },
    phases: { type: 'string', default: 'work' },
    mode: { type: 'string', default: 'ok' },
    'work-ms': { type: 'string' },
    effects: { type: 'string' },
    'no-reap': { type: 'boolean', default: false },
    'poll-ms': { type: 'string', default: '200' },
    concurrency: { type: 'string', default: '1' },
  },
});

const out = (line: Record<string, unknown>) => process.stdout.write(JSON.stringify(line) + '\n');
const effects = values.effects ? openSync(values.effects, 'a') : null;
const agentId = values['agent-id']!;

function effect(ctx: PhaseContext): void {
  if (effects === null) return;
  writeSync(
    effects,
    JSON.stringify({ task_id: ctx.taskId, epoch: ctx.epoch, agent: agentId, phase: ctx.phase, attempts: ctx.attempts }) + '\n',
  );
  fdatasyncSync(effects);
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(signal.reason);
      },
      { once: true },
    );
  });

async function handler(ctx: PhaseContext): Promise<PhaseOutcome> {
  effect(ctx);
  if (values.mode === 'hang') await new Promise(() => {});
  if (values.mode === 'throw') throw new Error(`${agentId} failed on purpose`);
  if (values.mode === 'block') {
    const end = Date.now() + Number(values['work-ms'] ?? 1000);
    while (Date.now() < end) {
      // a stalled process: no timer, no lease renewal, until it wakes up
    }
    return { output: { by: agentId, epoch: ctx.epoch, late: true } };
  }
  const ms = values['work-ms'] !== undefined ? Number(values['work-ms']) : Math.floor(Math.random() * 3);
  if (ms > 0) await sleep(ms, ctx.signal);
  return { output: { by: agentId, epoch: ctx.epoch, attempts: ctx.attempts, input: ctx.input } };
}

const agent = await runWorkspaceAgent({
  workspace: values.workspace!,
  agentId,
  phases: values.phases!.split(','),
  handler,
  reap: !values['no-reap'],
  pollMs: Number(values['poll-ms']),
  concurrency: Number(values.concurrency),
  handleSignals: true,
  graceMs: 1000,
  onEvent: (e) => out({ event: e.type, ...e }),
  logger: (level, message) => process.stderr.write(`[${level}] ${message}\n`),
});
out({ event: 'ready', agent: agentId, pid: process.pid });
await agent.stopped;
if (effects !== null) closeSync(effects);
out({ event: 'stopped', agent: agentId });
process.exit(0);
