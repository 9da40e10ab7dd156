/**
 * Leases, the reaper and fencing: a stale claimant can never overwrite the task, a killed agent's
 * task is returned and finished by another, repeated failures end as dead letters
 * (spec: bindings-workspace#transitions, #reaper, #dead-letters).
 */
import { promises as fsp, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  Reaper,
  claimPending,
  commitTransition,
  initWorkspace,
  listRecords,
  locateTask,
  prepare,
  readLease,
  runWorkspaceAgent,
  settleMarker,
  submitTask,
  writeLease,
  type TaskRecord,
  type Workspace,
  type WorkspaceAgent,
} from './index.ts';
import { transitionNonce } from './transition.ts';
import { HERE, runScript, scratchDir, stopChild, waitFor, type ScriptChild } from './workspace.testkit.ts';

const AGENT = join(HERE, 'agent.testkit.ts');
// The tests that start agent processes allow 120 s: more than the sum of their own bounded waits
// (each names what did not happen), so on a loaded machine a failure says which step was late.
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
});

async function workspace(settings: { lease_ms: number; max_attempts?: number }): Promise<Workspace> {
  const root = await scratchDir();
  cleanups.push(() => fsp.rm(root, { recursive: true, force: true }));
  return (await initWorkspace(root, settings)).workspace;
}

/** Waits until `c` has claimed a task and written the claim's lease, then kills it with SIGKILL. */
async function killMidTask(ws: Workspace, c: ScriptChild, effects?: { file: string; agent: string }): Promise<void> {
  // A process start under a loaded machine's other test files can take many seconds.
  const claimed = await c.line((l) => l.event === 'claimed', 40_000);
  const lease = ws.paths.sidecar(String(claimed.task_id), Number(claimed.epoch), 'lease');
  await waitFor(
    () =>
      fsp.access(lease).then(
        () => true,
        () => false,
      ),
    10_000,
    'the lease',
  );
  // With an effects file, the kill waits for the phase to have begun its effect: a claim and its
  // lease come before the handler runs, and a loaded machine can hold the handler back past them.
  if (effects)
    await waitFor(
      () =>
        fsp.readFile(effects.file, 'utf8').then(
          (text) => text.includes(`"agent":${JSON.stringify(effects.agent)}`),
          () => false,
        ),
      10_000,
      `the effect of ${effects.agent}`,
    );
  c.child.kill('SIGKILL');
  await c.exited;
}

function child(args: string[]): ScriptChild {
  const c = runScript(AGENT, args);
  cleanups.push(() => stopChild(c, 1000));
  return c;
}

async function record(ws: Workspace, dir: 'pending' | 'completed' | 'failed', id: string): Promise<TaskRecord> {
  return JSON.parse(await fsp.readFile(ws.paths.record(dir, id), 'utf8')) as TaskRecord;
}

describe('fencing (spec: bindings-workspace#transitions)', () => {
  it('discards the late write of a slow agent whose lease expired after another agent re-claimed and finished the task', async () => {
    const ws = await workspace({ lease_ms: 200 });
    await submitTask(ws, { task_id: 'slow-task', next_phase: 'work', input: 'x' });
    // The slow agent claims at epoch 1, writes its lease once and then stalls.
    const slow = (await claimPending(ws, 'slow-task', 0, 'slow'))!;
    expect(slow.epoch).toBe(1);
    await writeLease(ws, 'slow-task', 1, { agent_id: 'slow', epoch: 1, renewals: 0 });

    // A reaper with its own clock sees the lease unchanged for lease_ms and re-queues.
    let clock = 0;
    const reaper = new Reaper(ws, { actor: 'reaper', now: () => clock });
    expect(await reaper.pass()).toEqual([]);
    clock = 150;
    expect(await reaper.pass()).toEqual([]);
    clock = 200;
    expect(await reaper.pass()).toEqual([
      expect.objectContaining({ task_id: 'slow-task', epoch: 1, action: 'requeued', holder: 'slow', attempts: 1 }),
    ]);
    expect((await record(ws, 'pending', 'slow-task')).state).toMatchObject({ attempts: 1, epoch: 1, status: 'pending' });

    // Another agent claims (epoch 2) and finishes.
    const fast = await runWorkspaceAgent({
      workspace: ws,
      agentId: 'fast',
      phases: ['work'],
      handler: () => ({ output: 'from fast' }),
      reap: false,
      pollMs: 50,
    });
    cleanups.push(() => fast.stop());
    await waitFor(async () => (await locateTask(ws, 'slow-task'))?.dir === 'completed', 5000, 'the task to complete');

    // The slow agent finally tries to finish: its commit rename finds nothing, its work is discarded.
    const late = structuredClone(slow.check.ok ? slow.check.record : ({} as TaskRecord));
    late.state = { ...late.state, epoch: 1, status: 'completed', processed_by: 'slow' };
    late.next_phase = null;
    late.context.current_input = 'from slow';
    expect(await commitTransition(ws, slow, prepare(late), 'slow')).toEqual({ ok: false, reason: 'lost' });

    const done = await record(ws, 'completed', 'slow-task');
    expect(done.context.history).toEqual([expect.objectContaining({ agent: 'fast', output: 'from fast' })]);
    expect(done.state).toMatchObject({ epoch: 2, processed_by: 'fast' });
    // Nothing of the slow claim is left behind: no prepared record, no marker.
    expect((await fsp.readdir(ws.paths.dir('processing'))).filter((n) => !n.startsWith('.'))).toEqual([]);
  });

  it('discards the result of an agent process that stalled past its lease while another agent finished the task', async () => {
    const ws = await workspace({ lease_ms: 300 });
    await submitTask(ws, { task_id: 'stalled', next_phase: 'work', input: null });
    const slow = child([
      '--workspace',
      ws.root,
      '--agent-id',
      'staller',
      '--mode',
      'block',
      '--work-ms',
      '2500',
      '--no-reap',
      '--poll-ms',
      '50',
    ]);
    const claimed = await slow.line((l) => l.event === 'claimed');
    expect(claimed).toMatchObject({ task_id: 'stalled', epoch: 1 });
    const rescuer = await runWorkspaceAgent({
      workspace: ws,
      agentId: 'rescuer',
      phases: ['work'],
      handler: (ctx) => ({ output: { by: 'rescuer', epoch: ctx.epoch } }),
      pollMs: 50,
    });
    cleanups.push(() => rescuer.stop());
    await waitFor(async () => (await locateTask(ws, 'stalled'))?.dir === 'completed', 10_000, 'the rescue');
    await slow.line((l) => l.event === 'lost', 15_000);
    const done = await record(ws, 'completed', 'stalled');
    expect(done.context.history).toEqual([expect.objectContaining({ agent: 'rescuer', output: { by: 'rescuer', epoch: 2 } })]);
    expect(done.state).toMatchObject({ epoch: 2, attempts: 0, processed_by: 'rescuer' });
    expect(slow.lines.filter((l) => l.event === 'finished')).toEqual([]);
  }, 120_000);

  it('lets exactly one of a claimant and the reaper end the same claim', async () => {
    const ws = await workspace({ lease_ms: 100 });
    for (let round = 0; round < 20; round++) {
      const id = `duel-${round}`;
      await submitTask(ws, { task_id: id, next_phase: 'work', input: round });
      const claim = (await claimPending(ws, id, 0, 'agent'))!;
      const finished = structuredClone(claim.check.ok ? claim.check.record : ({} as TaskRecord));
      finished.state = { ...finished.state, epoch: 1, status: 'completed' };
      finished.next_phase = null;
      let clock = 0;
      const reaper = new Reaper(ws, { actor: 'reaper', now: () => clock });
      await reaper.pass();
      clock = 1000;
      const [agentSide, reaperSide] = await Promise.all([commitTransition(ws, claim, prepare(finished), 'agent'), reaper.pass()]);
      const reaped = reaperSide.some((a) => a.task_id === id && a.action === 'requeued');
      expect(agentSide.ok !== reaped, `round ${round}: agent ${agentSide.ok}, reaper ${reaped}`).toBe(true);
      const where = (await locateTask(ws, id))!;
      expect(where.dir).toBe(agentSide.ok ? 'completed' : 'pending');
    }
  });

  it('returns a claim made on a newer record than the one read, unchanged, so an epoch is never reused', async () => {
    const ws = await workspace({ lease_ms: 1000 });
    await submitTask(ws, { task_id: 'aba', next_phase: 'work', input: 1 });
    // Someone claims epoch 1 and publishes the next phase (epoch 1 in the record).
    const first = (await claimPending(ws, 'aba', 0, 'first'))!;
    const next = structuredClone(first.check.ok ? first.check.record : ({} as TaskRecord));
    next.state.epoch = 1;
    next.next_phase = 'review';
    expect((await commitTransition(ws, first, prepare(next), 'first')).ok).toBe(true);
    // A claimant that read the file at epoch 0 long ago now renames the new record to @1.
    expect(await claimPending(ws, 'aba', 0, 'late')).toBeNull();
    const back = await record(ws, 'pending', 'aba');
    expect(back).toEqual(next);
    // The next claim is epoch 2.
    expect((await claimPending(ws, 'aba', 1, 'third'))?.epoch).toBe(2);
  });
});

describe('crash recovery (spec: bindings-workspace#transitions)', () => {
  it('publishes the prepared record of an actor that stopped between its commit and its publish', async () => {
    const ws = await workspace({ lease_ms: 100 });
    await submitTask(ws, { task_id: 'half', next_phase: 'work', input: null });
    const claim = (await claimPending(ws, 'half', 0, 'crasher'))!;
    const next = structuredClone(claim.check.ok ? claim.check.record : ({} as TaskRecord));
    next.state = { ...next.state, epoch: 1, status: 'completed' };
    next.next_phase = null;
    // Steps 1 and 2 of a transition, then the actor is gone.
    const nonce = transitionNonce(claim.digest);
    await fsp.writeFile(ws.paths.next('half', 1, nonce), JSON.stringify(next));
    await fsp.rename(ws.paths.claim('half', 1), ws.paths.marker('half', 1, nonce));
    let clock = 0;
    const reaper = new Reaper(ws, { actor: 'reaper', now: () => clock });
    expect(await reaper.pass()).toEqual([]);
    clock = 100;
    expect(await reaper.pass()).toEqual([expect.objectContaining({ task_id: 'half', epoch: 1, action: 'recovered' })]);
    expect((await record(ws, 'completed', 'half')).state.status).toBe('completed');
    expect((await fsp.readdir(ws.paths.dir('processing'))).filter((n) => !n.startsWith('.'))).toEqual([]);
  });

  it('never publishes a prepared record over a committed file that is not the record its actor read', async () => {
    const ws = await workspace({ lease_ms: 100 });
    await submitTask(ws, { task_id: 'swapped', next_phase: 'work', input: 'original' });
    const claim = (await claimPending(ws, 'swapped', 0, 'actor'))!;
    const stale = structuredClone(claim.check.ok ? claim.check.record : ({} as TaskRecord));
    stale.state = { ...stale.state, epoch: 1, status: 'completed' };
    // The nonce carries the digest of other bytes than the marker will hold.
    const nonce = transitionNonce('0'.repeat(64));
    await fsp.writeFile(ws.paths.next('swapped', 1, nonce), JSON.stringify(stale));
    await fsp.rename(ws.paths.claim('swapped', 1), ws.paths.marker('swapped', 1, nonce));
    expect(await settleMarker(ws, 'swapped', 1, nonce)).toEqual({ result: 'returned' });
    expect((await record(ws, 'pending', 'swapped')).context.current_input).toBe('original');
    expect(await locateTask(ws, 'swapped')).toMatchObject({ dir: 'pending' });
    expect(await fsp.readdir(ws.paths.dir('completed'))).toEqual([]);
  });

  it('removes the leftovers of a claim that ended, once it has seen them for lease_ms', async () => {
    const ws = await workspace({ lease_ms: 100 });
    await writeLease(ws, 'gone', 7, { agent_id: 'late-renewer', epoch: 7, renewals: 9 });
    let clock = 0;
    const reaper = new Reaper(ws, { actor: 'reaper', now: () => clock });
    expect(await reaper.pass()).toEqual([]);
    clock = 100;
    expect(await reaper.pass()).toEqual([expect.objectContaining({ task_id: 'gone', action: 'removed', file: 'gone@7.lease.json' })]);
  });
});

describe('the reaper (spec: bindings-workspace#reaper)', () => {
  it('never reaps a claim whose lease it has not seen unchanged for lease_ms, nor one whose lease is renewed', async () => {
    const ws = await workspace({ lease_ms: 300 });
    await submitTask(ws, { task_id: 'kept', next_phase: 'work', input: null });
    await claimPending(ws, 'kept', 0, 'holder');
    let clock = 0;
    const reaper = new Reaper(ws, { actor: 'reaper', now: () => clock });
    for (let renewals = 0; renewals < 5; renewals++) {
      await writeLease(ws, 'kept', 1, { agent_id: 'holder', epoch: 1, renewals });
      expect(await reaper.pass()).toEqual([]);
      clock += 299;
      expect(await reaper.pass()).toEqual([]);
    }
    // A reaper that starts late has observed nothing yet, whatever the file times say.
    const late = new Reaper(ws, { actor: 'late', now: () => 10_000_000 });
    expect(await late.pass()).toEqual([]);
    expect(await readLease(ws, 'kept', 1)).toMatchObject({ agent_id: 'holder', renewals: 4 });
  });

  it('returns the task of a SIGKILLed agent, another agent completes it, and attempts shows the retry', async () => {
    const ws = await workspace({ lease_ms: 400, max_attempts: 3 });
    const effects = join(ws.root, 'effects.jsonl');
    await submitTask(ws, { task_id: 'killed', next_phase: 'work', input: 'go' });
    const victim = child(['--workspace', ws.root, '--agent-id', 'victim', '--mode', 'hang', '--no-reap', '--effects', effects]);
    await killMidTask(ws, victim, { file: effects, agent: 'victim' });
    const rescuer = child(['--workspace', ws.root, '--agent-id', 'rescuer', '--effects', effects, '--poll-ms', '50']);
    await rescuer.line((l) => l.event === 'finished', 20_000);
    expect(rescuer.lines).toContainEqual(
      expect.objectContaining({
        event: 'reaped',
        action: expect.objectContaining({ task_id: 'killed', action: 'requeued', holder: 'victim', attempts: 1 }),
      }),
    );
    const done = await record(ws, 'completed', 'killed');
    expect(done.state).toMatchObject({ status: 'completed', epoch: 2, processed_by: 'rescuer' });
    expect(done.context.history).toEqual([
      expect.objectContaining({ agent: 'rescuer', output: expect.objectContaining({ attempts: 1, epoch: 2 }) }),
    ]);
    const runs = readFileSync(effects, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(runs).toEqual([
      expect.objectContaining({ task_id: 'killed', epoch: 1, agent: 'victim', attempts: 0 }),
      expect.objectContaining({ task_id: 'killed', epoch: 2, agent: 'rescuer', attempts: 1 }),
    ]);
  }, 120_000);

  it('moves a task to failed/ with MAX_ATTEMPTS after max_attempts killed claims (spec: bindings-workspace#dead-letters)', async () => {
    const ws = await workspace({ lease_ms: 300, max_attempts: 2 });
    await submitTask(ws, { task_id: 'doomed', next_phase: 'work', input: null });
    const reaper = new Reaper(ws, { actor: 'reaper' });
    const reaping = setInterval(() => void reaper.pass(), 50);
    cleanups.push(async () => clearInterval(reaping));
    for (const name of ['victim-1', 'victim-2']) {
      const c = child(['--workspace', ws.root, '--agent-id', name, '--mode', 'hang', '--no-reap', '--poll-ms', '50']);
      await killMidTask(ws, c);
    }
    await waitFor(async () => (await locateTask(ws, 'doomed'))?.dir === 'failed', 10_000, 'the dead letter');
    const dead = await record(ws, 'failed', 'doomed');
    expect(dead.state).toMatchObject({ status: 'failed', attempts: 2, epoch: 2, processed_by: 'victim-2' });
    expect(dead.state.last_error).toMatchObject({ code: 'MAX_ATTEMPTS' });
    expect(dead.state.last_error!.message).toMatch(/claimed 2 times .*lease of claim 2 by victim-2 expired/);
  }, 120_000);

  it('dead-letters a phase whose handler keeps failing with a retryable error, keeping that error in the message', async () => {
    const ws = await workspace({ lease_ms: 5000, max_attempts: 3 });
    await submitTask(ws, { task_id: 'flaky', next_phase: 'work', input: null });
    const agent: WorkspaceAgent = await runWorkspaceAgent({
      workspace: ws,
      agentId: 'flaky-agent',
      phases: ['work'],
      handler: () => {
        throw new Error('the model endpoint is down');
      },
      pollMs: 50,
    });
    cleanups.push(() => agent.stop());
    await waitFor(async () => (await locateTask(ws, 'flaky'))?.dir === 'failed', 10_000, 'the dead letter');
    const dead = await record(ws, 'failed', 'flaky');
    expect(dead.state).toMatchObject({ attempts: 3, epoch: 3 });
    expect(dead.state.last_error?.code).toBe('MAX_ATTEMPTS');
    expect(dead.state.last_error?.message).toContain('INTERNAL_ERROR: the model endpoint is down');
    expect(await listRecords(ws, 'pending')).toEqual([]);
  });
});
