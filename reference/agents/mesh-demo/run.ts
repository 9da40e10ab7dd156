/**
 * The mesh demo: a NATS server, five agent processes (an analyst, two coders, a reviewer and a
 * router) that join its registry, and a coordinator that routes a pipeline by capability. One
 * coder is killed with SIGKILL in the middle of its task; the timeline shows the registry
 * dropping it, the task moving to the other coder with its attempt number, and the one trace
 * across every hop (spec: registry, mesh).
 *
 *   npx tsx reference/agents/mesh-demo/run.ts [--logs DIR]
 *
 * Needs nats-server on PATH (apt-get install nats-server) or in TAP_NATS_SERVER.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { connectMesh } from '../../mesh/connect.ts';
import type { MeshTask } from '../../mesh/task.ts';
import { jsonLines, type TraceRecord } from '../../mesh/trace.ts';
import { readTraceRecords, renderTrace, traceView } from '../../mesh/trace-view.ts';
import { natsServerInstalled, NO_NATS_SERVER, startNatsServer } from '../../transports/nats/nats-server.testkit.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '../../..');
const COORDINATOR = 'mesh-demo.coordinator';
const AGENTS = [
  { id: 'mesh-demo.analyst', role: 'analyst' },
  { id: 'mesh-demo.coder-1', role: 'coder' },
  { id: 'mesh-demo.coder-2', role: 'coder' },
  { id: 'mesh-demo.reviewer', role: 'reviewer' },
  { id: 'mesh-demo.router', role: 'router' },
];

const { values } = parseArgs({ options: { logs: { type: 'string' } } });
const started = Date.now();
const stamp = (): string => `+${((Date.now() - started) / 1000).toFixed(3)}s`.padStart(9);
const say = (text: string): void => void process.stdout.write(`${stamp()}  ${text}\n`);
const short = (id: string | undefined): string => (id ?? '?').replace(/^mesh-demo\./, '');

async function main(): Promise<number> {
  if (!natsServerInstalled) {
    process.stderr.write(`${NO_NATS_SERVER}\n`);
    return 1;
  }
  const logs = values.logs ?? mkdtempSync(join(tmpdir(), 'tap-mesh-demo-'));
  mkdirSync(logs, { recursive: true });
  const children = new Map<string, ChildProcess>();
  const server = await startNatsServer();
  process.stdout.write('TAP mesh demo: five agent processes find each other through a registry on NATS\n\n');
  say(`nats-server listening on ${server.url}; trace records go to ${logs}`);
  const records: TraceRecord[] = [];
  const file = jsonLines(createWriteStream(join(logs, `${COORDINATOR}.jsonl`)));
  const mesh = await connectMesh(server.url, {
    agentId: COORDINATOR,
    traceSink: (r) => {
      records.push(r);
      file(r);
      if (r.type === 'task.request' && r.dir === 'sent')
        say(`coordinator → ${short(r.peer)}: task.request ${r.task_id}, attempt ${r.attempt}, span ${r.span_id}`);
      if (r.type === 'task.result' && r.dir === 'received')
        say(`${short(r.peer)} → coordinator: task.result ${r.status} after ${r.duration_ms} ms (task ${r.task_id})`);
      if (r.type === 'mesh.ending')
        say(
          `${short(r.peer)} is lost holding task ${r.task_id}: the copy ${r.status === 'moved' ? 'moves on' : 'cannot move'} (${r.code})`,
        );
    },
  });
  const lost = new Set<string>();
  await mesh.watch((c) => {
    if (c.kind === 'live') return;
    if (c.kind === 'stale') lost.add(c.agentId);
    say(`registry: ${short(c.agentId)} ${c.kind === 'stale' ? 'dropped: its entry went stale (no heartbeat)' : 'withdrew its entry'}`);
  });
  try {
    await Promise.all(
      AGENTS.map(
        (a) =>
          new Promise<void>((ready, fail) => {
            const child = spawn(
              process.execPath,
              ['--import', 'tsx', join(HERE, 'agent.ts'), '--role', a.role, '--id', a.id, '--nats', server.url, '--logs', logs],
              { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
            );
            children.set(a.id, child);
            let out = '';
            child.stdout!.on('data', (d: Buffer) => {
              out += d.toString();
              if (out.split('\n').includes('ready')) ready();
            });
            child.once('exit', (code) => fail(new Error(`the ${a.role} exited (${code}) before it joined`)));
          }),
      ),
    );
    for (let i = 0; (await mesh.discover({})).length < AGENTS.length; i++) {
      if (i > 200) throw new Error('the agents did not all join the registry');
      await new Promise((r) => setTimeout(r, 50));
    }
    for (const e of await mesh.discover({})) {
      const caps = e.card.capabilities.map((c) => c.name).filter((n) => n.startsWith('demo.'));
      say(
        `registry: ${short(e.agent_id)} joined (pid ${children.get(e.agent_id)?.pid}) offering ${caps.join(', ')}, load ${e.load.running_tasks}/${e.load.max_concurrent_tasks}`,
      );
    }

    // 1. Analyse: the first submission sets the trace; every later step carries it.
    process.stdout.write('\n');
    const analysis = await mesh.task('demo.analyze', { request: 'Slugify titles' });
    const trace = { trace_id: analysis.traceId };
    say(`pipeline trace ${trace.trace_id}`);
    const spec = (await analysis.result).output as { spec: string };

    // 2. Code, on whichever coder is least loaded; that coder is killed in the middle of it.
    const coding: MeshTask = await mesh.task('demo.code', spec, { trace });
    let killed = '';
    void (async () => {
      for await (const ev of coding.events) {
        const p = ev.payload as { kind?: string; percent?: number; stage?: string };
        if (p.kind !== 'progress') continue;
        say(`${short(coding.agentId)}: ${p.percent}% ${p.stage} (attempt ${coding.hops[coding.hops.length - 1]?.attempt})`);
        if (!killed && (p.percent ?? 0) >= 50) {
          killed = coding.agentId!;
          const child = children.get(killed)!;
          say(`KILL ${short(killed)} (SIGKILL to pid ${child.pid}) while it holds task ${coding.taskId}`);
          child.kill('SIGKILL');
        }
      }
    })().catch(() => undefined);
    const code = await coding.result;
    const hops = coding.hops.map((h) => `${short(h.agentId)} attempt ${h.attempt} (${h.outcome})`).join(' → ');
    say(`demo.code ${code.status}: ${hops}; one idempotency key ${coding.idempotencyKey}`);

    // 3. Review, through the router, which forwards to the reviewer with the trace and a child span.
    const review = await mesh.task('demo.route', { capability: 'demo.review', input: code.output }, { trace });
    const reviewed = await review.result;
    say(`review via ${short(review.agentId)}: ${JSON.stringify(reviewed.output)}`);

    // The one trace, from the coordinator's and the router's records.
    await new Promise((r) => setTimeout(r, 200));
    const all = [...records, ...readTraceRecords(logs).filter((r) => r.node !== COORDINATOR)];
    const view = traceView(trace.trace_id, all);
    const nodes = new Set(view.records.map((r) => r.node));
    say(
      `trace records: ${view.records.length} from ${nodes.size} nodes (${[...nodes].map(short).sort().join(', ')}), one per message sent or received`,
    );
    process.stdout.write('\n');
    for (const line of renderTrace(view)) process.stdout.write(`${line}\n`);
    process.stdout.write(`\ntapctl mesh trace ${trace.trace_id} --logs ${logs} shows it again.\n`);
    return view.problems.length === 0 && code.status === 'completed' && lost.has(killed) ? 0 : 1;
  } finally {
    await mesh.close();
    await Promise.all(
      [...children.values()].map(
        (c) =>
          new Promise<void>((done) => {
            if (c.exitCode !== null || c.signalCode !== null) return done();
            c.once('exit', () => done());
            c.kill('SIGTERM');
            setTimeout(() => c.kill('SIGKILL'), 5000).unref();
          }),
      ),
    );
    await server.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`mesh demo: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
