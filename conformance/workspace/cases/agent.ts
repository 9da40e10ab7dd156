/**
 * The agent in the workspace: its card and state published before it claims anything, its
 * heartbeat, its refusal of a workspace it cannot work in, and its orderly stop
 * (spec: bindings-workspace#agents, #configuration; shutdown#signals).
 */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { initWorkspace } from '../../../reference/workspace/index.ts';
import { validateAgainst } from '../../../reference/core/validate.ts';
import { check, show, verdictOf } from '../../cases/kit.ts';
import { describeIssues } from '../../schemas.ts';
import { fail, nonStrict, pass, skipped, timingWindow, type Outcome } from '../../verdict.ts';
import { AgentProcess } from '../agent-process.ts';
import { finishWithin, needAlive, needPhases, stop, whereIs, wsCase } from '../kit.ts';
import { claimFiles, poll, readRecordFile } from '../observe.ts';
import { PHASES, publishRecord, record } from '../records.ts';
import type { WorkspaceRun } from '../workspace-run.ts';

async function readJson(path: string): Promise<{ value?: unknown; problem?: string }> {
  const text = await fsp.readFile(path, 'utf8').catch(() => null);
  if (text === null) return { problem: 'missing' };
  try {
    return { value: JSON.parse(text) };
  } catch (err) {
    return { problem: `not JSON (${(err as Error).message})` };
  }
}

/** Heartbeat counters seen over `ms`, with the time each was first seen. */
async function watchHeartbeat(run: WorkspaceRun, ms: number): Promise<{ at: number; counter: unknown }[]> {
  const path = join(run.ws.paths.agent(run.agentId), 'heartbeat.json');
  const seen: { at: number; counter: unknown }[] = [];
  const t0 = performance.now();
  let last = '';
  while (performance.now() - t0 < ms) {
    const text = await fsp.readFile(path, 'utf8').catch(() => '');
    if (text !== '' && text !== last) {
      last = text;
      let counter: unknown;
      try {
        counter = (JSON.parse(text) as { counter?: unknown }).counter;
      } catch {
        counter = undefined;
      }
      seen.push({ at: performance.now() - t0, counter });
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  return seen;
}

/** Starts the agent command in a second workspace with `config`, leaves it a few seconds, and reports what it did to a pending task there. */
async function unsupportedWorkspace(run: WorkspaceRun, name: string, config: Record<string, unknown> | null): Promise<Outcome | null> {
  const root = join(run.root, 'tap-conform-aux', name);
  const { workspace: ws } = await initWorkspace(root, { lease_ms: run.leaseMs });
  if (config) await fsp.writeFile(ws.paths.config, JSON.stringify({ ...ws.config, ...config }, null, 2) + '\n');
  else await fsp.rm(ws.paths.config);
  const id = 'untouchable';
  const bytes = await publishRecord(ws, 'pending', record(id, PHASES.echo, { unsupported: name }));
  const s = run.settings;
  const agent = await AgentProcess.start({ command: s.command, args: s.args, workspace: root, agentId: run.agentId, env: s.env });
  try {
    await agent.waitExit(run.scaled(Math.max(3000, run.leaseMs * 2)));
  } finally {
    await agent.stop(3000);
    agent.killGroup();
  }
  const now = await fsp.readFile(ws.paths.record('pending', id)).catch(() => null);
  const claimed = await claimFiles(ws.paths.dir('processing'), id);
  const elsewhere = [];
  for (const dir of ['completed', 'failed'] as const) if (await readRecordFile(ws.paths.record(dir, id), id)) elsewhere.push(`${dir}/`);
  const what = config ? `in a workspace whose tap-workspace.json says ${show(config)}` : 'in a directory without tap-workspace.json';
  if (
    !config &&
    (await fsp.stat(ws.paths.config).then(
      () => true,
      () => false,
    ))
  ) {
    return fail(`${what}, the agent wrote a tap-workspace.json of its own`, 'the directory left alone', 'a new tap-workspace.json');
  }
  if (elsewhere.length > 0 || claimed.length > 0 || !now || !now.equals(bytes)) {
    const where = elsewhere.length
      ? `moved to ${elsewhere.join(', ')}`
      : claimed.length
        ? `claimed (${claimed.join(', ')})`
        : 'changed or removed';
    return fail(
      `${what}, the agent worked anyway: the pending task was ${where}`,
      'the agent refuses the workspace and leaves its files alone',
      where,
    );
  }
  return null;
}

export const agentCases = [
  wsCase({
    id: 'workspace.agent.card-and-state',
    title: 'The agent publishes agents/<id>/card.json and state.json, valid, before it claims a record',
    spec: 'bindings-workspace#agents',
    requirements: ['TAP-WKS-027'],
    async run(ctx, run) {
      const dir = run.ws.paths.agent(run.agentId);
      const card = await readJson(join(dir, 'card.json'));
      const state = await readJson(join(dir, 'state.json'));
      if (card.problem) stop(fail(`agents/${run.agentId}/card.json is ${card.problem}`, 'the agent card', card.problem));
      if (state.problem) stop(fail(`agents/${run.agentId}/state.json is ${state.problem}`, 'the agent state', state.problem));
      const issues = validateAgainst('agent-card.schema.json', card.value);
      const c = card.value as { agent_id?: unknown };
      const st = state.value as { phases?: unknown; status?: unknown; updated_at?: unknown };
      const before = run.startup.publishedBeforeClaim;
      ctx.note(`state.json: ${show(st)}; at the first claim of the task waiting at start-up: ${show(before)}`);
      return verdictOf(
        `card and state published${before ? ' before the first claim' : ''}; phases ${show(st.phases)}`,
        check(
          issues === null,
          `card.json does not match agent-card.schema.json: ${issues ? describeIssues(issues) : ''}`,
          'a valid agent card',
          show(card.value),
        ),
        check(
          c.agent_id === run.agentId,
          `card.json names agent_id ${show(c.agent_id)}, not the agent's id "${run.agentId}"`,
          run.agentId,
          show(c.agent_id),
        ),
        check(
          Array.isArray(st.phases) && st.phases.every((p) => typeof p === 'string'),
          'state.json has no "phases" list of phase names',
          '"phases": [ … ]',
          show(st.phases),
        ),
        check(
          st.status === 'idle' || st.status === 'busy' || st.status === 'stopped',
          `state.json has status ${show(st.status)}`,
          '"idle", "busy" or "stopped"',
          show(st.status),
        ),
        check(typeof st.updated_at === 'string', 'state.json has no "updated_at"', 'an RFC 3339 time', show(st.updated_at)),
        check(
          before === null || (before.card && before.state),
          `the agent claimed the task waiting at start-up before it published ${before && !before.card ? 'card.json' : 'state.json'}`,
          'card.json and state.json first',
          show(before),
        ),
      );
    },
  }),

  wsCase({
    id: 'workspace.agent.heartbeat',
    title: 'While it runs, the agent rewrites agents/<id>/heartbeat.json with an increasing counter at least every lease_ms / 3',
    spec: 'bindings-workspace#agents',
    requirements: ['TAP-WKS-027'],
    async run(ctx, run) {
      const every = run.leaseMs / 3;
      const w = timingWindow(every, ctx.env.timeScale);
      const seen = await watchHeartbeat(run, Math.max(w.latestMs * 2, run.leaseMs * 2));
      ctx.note(
        `heartbeat counters seen: ${show(
          seen.map((s) => `${s.counter}@${Math.round(s.at)}ms`),
          600,
        )}`,
      );
      if (seen.length === 0) stop(fail(`agents/${run.agentId}/heartbeat.json does not exist`, 'a heartbeat file', 'none'));
      const counters = seen.map((s) => s.counter);
      if (!counters.every((c) => typeof c === 'number'))
        stop(fail('heartbeat.json has no numeric "counter"', '{ "counter": n, … }', show(counters)));
      for (let i = 1; i < counters.length; i++) {
        if ((counters[i] as number) <= (counters[i - 1] as number))
          stop(fail(`the heartbeat counter went from ${counters[i - 1]} to ${counters[i]}`, 'an increasing counter', show(counters)));
      }
      const gaps = seen.slice(1).map((s, i) => s.at - seen[i]!.at);
      const widest = Math.max(0, ...gaps);
      if (seen.length < 2)
        stop(
          fail(
            `heartbeat.json was not rewritten within ${Math.round(w.latestMs * 2)} ms`,
            `a heartbeat at least every ${Math.round(every)} ms`,
            `counter ${show(counters[0])} only`,
          ),
        );
      if (widest > w.latestMs)
        stop(
          fail(
            `${Math.round(widest)} ms passed between two heartbeats, beyond the allowance of ${Math.round(w.latestMs)} ms`,
            `a heartbeat at least every ${Math.round(every)} ms`,
            `a gap of ${Math.round(widest)} ms`,
          ),
        );
      if (widest > w.punctualMs)
        return {
          ...nonStrict(`${Math.round(widest)} ms passed between two heartbeats; punctual is within ${Math.round(w.punctualMs)} ms`),
          timingOnly: true,
        };
      return pass(`${seen.length} heartbeats, at most ${Math.round(widest)} ms apart (lease_ms / 3 = ${Math.round(every)} ms)`);
    },
  }),

  wsCase({
    id: 'workspace.config.unsupported',
    title:
      'The agent does not work in a directory without tap-workspace.json, nor in a workspace of another major version or of an unknown claim mode',
    spec: 'bindings-workspace#configuration',
    requirements: ['TAP-WKS-002', 'TAP-WKS-001'],
    budgetMs: 40_000,
    async run(ctx, run) {
      const results = await Promise.all([
        unsupportedWorkspace(run, 'protocol-2', { protocol: 'tap/2.0' }),
        unsupportedWorkspace(run, 'claim-mode', { claim_mode: 'flock' }),
        unsupportedWorkspace(run, 'no-config', null),
      ]);
      ctx.note(
        'three more agent processes were started: in workspaces speaking tap/2.0 and claim_mode "flock", and in a directory without tap-workspace.json',
      );
      return verdictOf('the agent left all three directories alone', ...results);
    },
  }),

  wsCase({
    id: 'workspace.agent.graceful-stop',
    title: 'On SIGTERM the agent ends its sessions with a farewell, releases the record it holds and exits 0',
    spec: 'shutdown#signals',
    requirements: ['TAP-SHUT-014'],
    last: true,
    budgetMs: 60_000,
    async run(ctx, run) {
      if (run.stoppedOnPurpose) return skipped('an earlier repetition of this case stopped the agent');
      needPhases(run, PHASES.sleep);
      needAlive(run, 'before the stop');
      const id = run.taskId('stop');
      await publishRecord(run.ws, 'pending', record(id, PHASES.sleep, { ms: 120_000 }));
      const claim = await poll(() => run.observer.claims(id)[0] ?? null, finishWithin(run));
      if (!claim)
        stop(
          fail(
            `the agent did not claim a ${PHASES.sleep} task within ${Math.round(finishWithin(run))} ms`,
            'a claim',
            await whereIs(run, id),
          ),
        );
      const session = await ctx.session();
      const peer = session.ok ? session.value : null;
      if (!peer)
        ctx.note(`no mailbox session could be opened (${!session.ok ? session.outcome.detail : ''}); the stop is judged without one`);
      const t0 = performance.now();
      run.stoppedOnPurpose = true;
      run.agent.signal('SIGTERM');
      const grace = timingWindow(10_000, ctx.env.timeScale).latestMs;
      const exit = await run.agent.waitExit(grace);
      const took = performance.now() - t0;
      ctx.note(
        `the agent ${exit ? `exited (${exit.signal ?? `code ${exit.code}`}) after ${Math.round(took)} ms` : `was still running after ${Math.round(grace)} ms`}`,
      );
      const farewell = peer ? await peer.poll((r) => r.msg.type === 'session.farewell', ctx.scaled(1000)) : undefined;
      const left = await claimFiles(run.ws.paths.dir('processing'), id);
      const claimStillThere = left.some((n) => n === claim);
      const where = await whereIs(run, id);
      return verdictOf(
        `exited 0 after ${Math.round(took)} ms; the task is ${where}`,
        check(
          exit !== null,
          `the agent did not exit within ${Math.round(grace)} ms of SIGTERM`,
          'exit status 0 within the grace period',
          'still running',
        ),
        check(
          exit === null || (exit.code === 0 && exit.signal === null),
          `the agent exited with ${exit?.signal ?? `status ${exit?.code}`}`,
          'exit status 0',
          String(exit?.signal ?? exit?.code),
        ),
        peer
          ? check(
              farewell !== undefined,
              'the session over mailboxes got no session.farewell before the agent exited',
              'session.farewell',
              'nothing',
            )
          : null,
        check(
          !claimStillThere,
          `the agent exited holding ${claim}: the record stays claimed until a reaper returns it`,
          'the record released to pending/ (or finished)',
          `tasks/processing/${claim}`,
        ),
      );
    },
  }),
];
