/**
 * The capability's own failure in a workspace (spec: bindings-workspace#workspace-1-1): a
 * record of TAP 1.1 ends in failed/ with CAPABILITY_FAILED, one of 1.0 with INTERNAL_ERROR, and a
 * failure the capability reports transient goes back to pending/ for another attempt.
 */
import { promises as fsp } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { CapabilityError } from '../agent/handler.ts';
import { runWorkspaceAgent, submitTask, type PhaseContext, type TaskRecord, type Workspace } from './index.ts';
import { scratchWorkspace, waitFor } from './workspace.testkit.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
});

async function start(ws: Workspace, handler: (ctx: PhaseContext) => never | { output: unknown }): Promise<void> {
  const agent = await runWorkspaceAgent({ workspace: ws, agentId: 'worker', phases: { check: handler }, pollMs: 20, reap: false });
  cleanups.push(() => agent.stop());
}

async function recordIn(ws: Workspace, dir: 'completed' | 'failed', id: string): Promise<TaskRecord | null> {
  return fsp.readFile(ws.paths.record(dir, id), 'utf8').then(
    (t) => JSON.parse(t) as TaskRecord,
    () => null,
  );
}

async function ended(ws: Workspace, dir: 'completed' | 'failed', id: string): Promise<TaskRecord> {
  await waitFor(async () => (await recordIn(ws, dir, id)) !== null, 10_000, `the record in ${dir}/`);
  return (await recordIn(ws, dir, id))!;
}

describe("the capability's own failure in a workspace (spec: bindings-workspace#workspace-1-1)", () => {
  it('ends a record of 1.1 in failed/ with CAPABILITY_FAILED, and one of 1.0 with INTERNAL_ERROR', async () => {
    const ws = await scratchWorkspace(cleanups, { lease_ms: 300 });
    await start(ws, () => {
      throw new CapabilityError('the test suite failed');
    });
    await submitTask(ws, { task_id: 'new-one', protocol: 'tap/1.1', next_phase: 'check', input: null } as never);
    await submitTask(ws, { task_id: 'old-one', protocol: 'tap/1.0', next_phase: 'check', input: null } as never);
    const newer = await ended(ws, 'failed', 'new-one');
    expect(newer.state).toMatchObject({ status: 'failed', last_error: { code: 'CAPABILITY_FAILED', message: 'the test suite failed' } });
    expect((await ended(ws, 'failed', 'old-one')).state.last_error).toMatchObject({ code: 'INTERNAL_ERROR' });
  });

  it('puts back to pending/ a phase whose capability reported a transient failure, which the next claim finishes', async () => {
    const ws = await scratchWorkspace(cleanups, { lease_ms: 300 });
    let calls = 0;
    await start(ws, () => {
      if (++calls === 1) throw new CapabilityError('the registry was unavailable', { retryable: true });
      return { output: { ok: true } };
    });
    await submitTask(ws, { task_id: 'flaky', protocol: 'tap/1.1', next_phase: 'check', input: null } as never);
    const done = await ended(ws, 'completed', 'flaky');
    expect(calls).toBe(2);
    expect(done.context.history.at(-1)?.output).toEqual({ ok: true });
  });
});
