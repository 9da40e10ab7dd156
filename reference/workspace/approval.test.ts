/**
 * Plan approval through awaiting/: a phase parks its record with a plan, the requester decides,
 * and only a decision on the current plan lets an agent claim it again
 * (spec: bindings-workspace#approval-and-cancel, plans#decisions).
 */
import { promises as fsp } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  Reaper,
  cancelTask,
  decidePlan,
  runWorkspaceAgent,
  submitTask,
  workspaceStatus,
  type PhaseContext,
  type PhaseOutcome,
  type Plan,
  type RunnerEvent,
  type TaskRecord,
  type Workspace,
  type WorkspaceAgent,
} from './index.ts';
import { writeAtomic } from './fsio.ts';
import { scratchWorkspace, waitFor } from './workspace.testkit.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
});

const workspace = (): Promise<Workspace> => scratchWorkspace(cleanups, { lease_ms: 300 });

const PLAN: Plan = {
  plan_id: 'p-1',
  intent: 'Publish the digest.',
  steps: [
    { action: 'render', target: 'digest.md', expected_output: 'an HTML page', reversible: true },
    { action: 'publish', target: 'wiki://digest', expected_output: 'a wiki revision', reversible: true },
  ],
  rollback: 'Restore the previous revision.',
  estimated_cost: { seconds: 1 },
  risk_level: 'low',
};

/** A handler that plans first, revises on needs_revision, and on approval runs each step; it logs every call. */
function planner(calls: PhaseContext[]): (ctx: PhaseContext) => PhaseOutcome {
  return (ctx) => {
    calls.push(ctx);
    if (ctx.approvedPlan) return { output: { executed: ctx.approvedPlan.steps.map((s) => s.action) } };
    if (ctx.decision?.decision === 'needs_revision') {
      const n = Number(ctx.plan!.plan_id.slice(2)) + 1;
      return ctx.submitPlan({
        ...ctx.plan!,
        plan_id: `p-${n}`,
        risk_level: 'medium',
        revision_of: ctx.plan!.plan_id,
        feedback: ctx.decision.feedback ?? 'revised',
      });
    }
    return ctx.submitPlan(PLAN);
  };
}

async function start(ws: Workspace, handler: (ctx: PhaseContext) => PhaseOutcome, events: RunnerEvent[] = []): Promise<WorkspaceAgent> {
  const agent = await runWorkspaceAgent({
    workspace: ws,
    agentId: 'planner',
    phases: { deploy: handler },
    pollMs: 20,
    reap: false,
    onEvent: (e) => events.push(e),
  });
  cleanups.push(() => agent.stop());
  return agent;
}

async function recordIn(ws: Workspace, dir: 'awaiting' | 'completed' | 'failed', id: string): Promise<TaskRecord | null> {
  return fsp.readFile(ws.paths.record(dir, id), 'utf8').then(
    (t) => JSON.parse(t) as TaskRecord,
    () => null,
  );
}

async function exists(path: string): Promise<boolean> {
  return fsp.access(path).then(
    () => true,
    () => false,
  );
}

/** Waits for the task to park in awaiting/ with its plan file, and returns the record. */
async function parked(ws: Workspace, id: string, planId = 'p-1'): Promise<TaskRecord> {
  await waitFor(
    async () =>
      (await recordIn(ws, 'awaiting', id)) !== null &&
      (await fsp.readFile(ws.paths.plan(id), 'utf8').catch(() => '')).includes(`"${planId}"`),
    10_000,
    `${id} in awaiting/ with plan ${planId}`,
  );
  return (await recordIn(ws, 'awaiting', id))!;
}

describe('plan approval (spec: bindings-workspace#approval-and-cancel)', () => {
  it('parks the record in awaiting/ with its plan, never claims it undecided, and runs the approved steps once decided', async () => {
    const ws = await workspace();
    const calls: PhaseContext[] = [];
    const events: RunnerEvent[] = [];
    await start(ws, planner(calls), events);
    await submitTask(ws, { task_id: 'approve-me', next_phase: 'deploy', input: { digest: 'weekly' } });

    const waiting = await parked(ws, 'approve-me');
    expect(waiting.state).toMatchObject({ status: 'awaiting_approval', epoch: 1, processed_by: 'planner' });
    expect(waiting.context.history).toEqual([]);
    expect(JSON.parse(await fsp.readFile(ws.paths.plan('approve-me'), 'utf8'))).toEqual(PLAN);
    expect(events).toContainEqual(expect.objectContaining({ type: 'awaiting', task_id: 'approve-me', epoch: 1, plan_id: 'p-1' }));
    // TAP-WKS-022: without a decision the record stays where it is, however many scans pass.
    await new Promise((r) => setTimeout(r, 300));
    expect(calls).toHaveLength(1);
    expect(await recordIn(ws, 'awaiting', 'approve-me')).toEqual(waiting);

    const decided = await decidePlan(ws, 'approve-me', { plan_id: 'p-1', decision: 'approved', feedback: 'Go ahead.' });
    expect(decided.replaced).toBe(false);
    await waitFor(async () => (await recordIn(ws, 'completed', 'approve-me')) !== null, 10_000, 'the completed record');
    const done = (await recordIn(ws, 'completed', 'approve-me'))!;
    expect(calls).toHaveLength(2);
    expect(calls[1]!.epoch).toBe(2);
    expect(calls[1]!.approvedPlan).toEqual(PLAN);
    expect(calls[1]!.input).toEqual({ digest: 'weekly' });
    expect(done.state).toMatchObject({ status: 'completed', epoch: 2 });
    expect(done.context.history).toEqual([
      expect.objectContaining({
        phase: 'deploy',
        output: { executed: ['render', 'publish'] },
        plan: PLAN,
        decision: { plan_id: 'p-1', decision: 'approved', feedback: 'Go ahead.' },
      }),
    ]);
    // The plan and its decision are removed right after the record moves, not in the same step.
    await waitFor(
      async () => !(await exists(ws.paths.plan('approve-me'))) && !(await exists(ws.paths.decision('approve-me'))),
      10_000,
      'the plan and decision files removed',
    );
  });

  it('ends a rejected plan failed with PLAN_REJECTED without calling the handler again (spec: plans#decisions)', async () => {
    const ws = await workspace();
    const calls: PhaseContext[] = [];
    await start(ws, planner(calls));
    await submitTask(ws, { task_id: 'reject-me', next_phase: 'deploy', input: null });
    await parked(ws, 'reject-me');
    await decidePlan(ws, 'reject-me', { plan_id: 'p-1', decision: 'rejected', feedback: 'Too risky this week.' });
    await waitFor(async () => (await recordIn(ws, 'failed', 'reject-me')) !== null, 10_000, 'the failed record');
    const failed = (await recordIn(ws, 'failed', 'reject-me'))!;
    expect(failed.state).toMatchObject({ status: 'failed', epoch: 2, last_error: { code: 'PLAN_REJECTED' } });
    expect(failed.state.last_error!.message).toContain('Too risky this week.');
    expect(calls).toHaveLength(1);
    // The plan and its decision are removed right after the record moves, not in the same step.
    await waitFor(
      async () => !(await exists(ws.paths.plan('reject-me'))) && !(await exists(ws.paths.decision('reject-me'))),
      10_000,
      'the plan and decision files removed',
    );
  });

  it('after needs_revision parks a revised plan naming the plan it revises, and refuses a decision on the old one', async () => {
    const ws = await workspace();
    const calls: PhaseContext[] = [];
    await start(ws, planner(calls));
    await submitTask(ws, { task_id: 'revise-me', next_phase: 'deploy', input: null });
    await parked(ws, 'revise-me');
    await decidePlan(ws, 'revise-me', { plan_id: 'p-1', decision: 'needs_revision', feedback: 'Say the risk honestly.' });
    const again = await parked(ws, 'revise-me', 'p-2');
    expect(again.state).toMatchObject({ status: 'awaiting_approval', epoch: 2 });
    const revised = JSON.parse(await fsp.readFile(ws.paths.plan('revise-me'), 'utf8')) as Plan;
    expect(revised).toMatchObject({ plan_id: 'p-2', revision_of: 'p-1', feedback: 'Say the risk honestly.', risk_level: 'medium' });
    // The decision on p-1 is removed right after the revised plan is parked; one on p-1 now is refused as stale.
    await waitFor(async () => !(await exists(ws.paths.decision('revise-me'))), 10_000, 'the decision on p-1 removed');
    await expect(decidePlan(ws, 'revise-me', { plan_id: 'p-1', decision: 'approved' })).rejects.toMatchObject({ code: 'STALE_PLAN' });
    await decidePlan(ws, 'revise-me', { plan_id: 'p-2', decision: 'approved' });
    await waitFor(async () => (await recordIn(ws, 'completed', 'revise-me')) !== null, 10_000, 'the completed record');
    expect(calls.map((c) => [c.epoch, c.decision?.decision ?? null])).toEqual([
      [1, null],
      [2, 'needs_revision'],
      [3, 'approved'],
    ]);
  });

  it('never acts on a decision naming a stale plan_id, and reports it', async () => {
    const ws = await workspace();
    const calls: PhaseContext[] = [];
    const events: RunnerEvent[] = [];
    await start(ws, planner(calls), events);
    await submitTask(ws, { task_id: 'stale-one', next_phase: 'deploy', input: null });
    const waiting = await parked(ws, 'stale-one');
    await writeAtomic(ws.paths.decision('stale-one'), JSON.stringify({ plan_id: 'p-0', decision: 'approved' }));
    await waitFor(() => events.some((e) => e.type === 'decision_refused' && e.state === 'stale'), 5000, 'the stale decision reported');
    await new Promise((r) => setTimeout(r, 300));
    expect(calls).toHaveLength(1);
    expect(await recordIn(ws, 'awaiting', 'stale-one')).toEqual(waiting);
    expect((await workspaceStatus(ws)).awaiting).toEqual([
      expect.objectContaining({ task_id: 'stale-one', plan_id: 'p-1', state: 'stale', decision: 'approved' }),
    ]);
  });

  it('leaves the record in awaiting/ and reports a malformed or schema-invalid decision file, then acts on a valid one', async () => {
    const ws = await workspace();
    const calls: PhaseContext[] = [];
    const events: RunnerEvent[] = [];
    const agent = await start(ws, planner(calls), events);
    await submitTask(ws, { task_id: 'bad-decision', next_phase: 'deploy', input: null });
    await parked(ws, 'bad-decision');
    await writeAtomic(ws.paths.decision('bad-decision'), '{"plan_id": "p-1", "decision": ');
    await waitFor(
      () => events.some((e) => e.type === 'decision_refused' && e.message.includes('not JSON')),
      5000,
      'the malformed decision reported',
    );
    await writeAtomic(ws.paths.decision('bad-decision'), JSON.stringify({ plan_id: 'p-1', decision: 'yes please' }));
    await waitFor(
      () => events.some((e) => e.type === 'decision_refused' && e.message.includes('plan.decision.payload.schema.json')),
      5000,
      'the invalid decision reported',
    );
    expect(calls).toHaveLength(1);
    expect(agent.holding()).toEqual([]);
    expect(await recordIn(ws, 'awaiting', 'bad-decision')).not.toBeNull();
    const status = await workspaceStatus(ws);
    expect(status.awaiting).toEqual([
      expect.objectContaining({
        task_id: 'bad-decision',
        state: 'bad-decision',
        problem: expect.stringContaining('decision.json is refused'),
      }),
    ]);
    expect(status.ignored_files).toEqual([]);
    await decidePlan(ws, 'bad-decision', { plan_id: 'p-1', decision: 'approved' }).then((d) => expect(d.replaced).toBe(true));
    await waitFor(async () => (await recordIn(ws, 'completed', 'bad-decision')) !== null, 10_000, 'the completed record');
  });

  it('fails the phase with PROTOCOL_VIOLATION when it ends without the revision that needs_revision asks for', async () => {
    const ws = await workspace();
    let n = 0;
    await start(ws, (ctx) => (n++ === 0 ? ctx.submitPlan(PLAN) : { output: 'did it anyway' }));
    await submitTask(ws, { task_id: 'no-revision', next_phase: 'deploy', input: null });
    await parked(ws, 'no-revision');
    await decidePlan(ws, 'no-revision', { plan_id: 'p-1', decision: 'needs_revision', feedback: 'Smaller, please.' });
    await waitFor(async () => (await recordIn(ws, 'failed', 'no-revision')) !== null, 10_000, 'the failed record');
    expect((await recordIn(ws, 'failed', 'no-revision'))!.state.last_error).toMatchObject({ code: 'PROTOCOL_VIOLATION' });
  });

  it('refuses a revision that changes nothing (spec: plans#decisions)', async () => {
    const ws = await workspace();
    let n = 0;
    await start(ws, (ctx) =>
      n++ === 0 ? ctx.submitPlan(PLAN) : ctx.submitPlan({ ...PLAN, plan_id: 'p-2', revision_of: 'p-1', feedback: 'x' }),
    );
    await submitTask(ws, { task_id: 'same-plan', next_phase: 'deploy', input: null });
    await parked(ws, 'same-plan');
    await decidePlan(ws, 'same-plan', { plan_id: 'p-1', decision: 'needs_revision', feedback: 'Change something.' });
    await waitFor(async () => (await recordIn(ws, 'failed', 'same-plan')) !== null, 10_000, 'the failed record');
    const failed = (await recordIn(ws, 'failed', 'same-plan'))!;
    expect(failed.state.last_error).toMatchObject({
      code: 'INVALID_MESSAGE',
      message: expect.stringContaining('must change at least one'),
    });
  });

  it('refuses decisions that are invalid or for a task not in awaiting/', async () => {
    const ws = await workspace();
    await submitTask(ws, { task_id: 'still-pending', next_phase: 'deploy', input: null });
    await expect(decidePlan(ws, 'still-pending', { plan_id: 'p-1', decision: 'approved' })).rejects.toMatchObject({
      code: 'CONFLICT',
      message: expect.stringContaining('tasks/pending/'),
    });
    await expect(decidePlan(ws, 'nowhere', { plan_id: 'p-1', decision: 'approved' })).rejects.toMatchObject({ code: 'UNKNOWN_TASK' });
    await expect(decidePlan(ws, 'still-pending', { plan_id: 'P 1', decision: 'approved' })).rejects.toMatchObject({
      code: 'INVALID_DECISION',
    });
    await expect(decidePlan(ws, 'still-pending', { plan_id: 'p-1', decision: 'needs_revision' })).rejects.toMatchObject({
      code: 'INVALID_DECISION',
    });
  });

  it('cancels a task waiting in awaiting/ and removes its plan', async () => {
    const ws = await workspace();
    const agent = await start(ws, planner([]));
    await submitTask(ws, { task_id: 'cancel-me', next_phase: 'deploy', input: null });
    await parked(ws, 'cancel-me');
    await agent.stop();
    expect(await cancelTask(ws, 'cancel-me', 'requester')).toBe('cancelled');
    expect((await recordIn(ws, 'failed', 'cancel-me'))!.state).toMatchObject({ status: 'cancelled', epoch: 2 });
    expect(await exists(ws.paths.plan('cancel-me'))).toBe(false);
  });

  it('the reaper never touches a record in awaiting/, decided or not, however long it watches (spec: bindings-workspace#reaper)', async () => {
    const ws = await workspace();
    const agent = await start(ws, planner([]));
    await submitTask(ws, { task_id: 'parked', next_phase: 'deploy', input: null });
    await parked(ws, 'parked');
    await agent.stop();
    await decidePlan(ws, 'parked', { plan_id: 'p-1', decision: 'approved' });
    const names = async () => (await fsp.readdir(ws.paths.dir('awaiting'))).sort();
    const before = await Promise.all(
      [ws.paths.record('awaiting', 'parked'), ws.paths.plan('parked'), ws.paths.decision('parked')].map((p) => fsp.readFile(p)),
    );
    const listed = await names();
    let clock = 0;
    const reaper = new Reaper(ws, { actor: 'reaper', now: () => clock });
    for (let i = 0; i < 5; i++) {
      expect(await reaper.pass()).toEqual([]);
      clock += 10 * ws.config.lease_ms;
    }
    expect(await names()).toEqual(listed);
    const after = await Promise.all(
      [ws.paths.record('awaiting', 'parked'), ws.paths.plan('parked'), ws.paths.decision('parked')].map((p) => fsp.readFile(p)),
    );
    expect(after).toEqual(before);
  });
});
