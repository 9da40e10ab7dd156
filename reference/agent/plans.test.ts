import { afterEach, describe, expect, it } from 'vitest';
import { flush, ManualClock, testAgent, TestPeer, type Msg, expectCleanHistories, TWO_FILE_PLAN as draft } from './peer.testkit.ts';

afterEach(expectCleanHistories);

async function planTask(peer: TestPeer, taskId: string, payload: Msg = {}): Promise<Msg> {
  peer.request(taskId, 'tap.test.plan', { plan: draft }, payload);
  return peer.waitFor((m) => m.type === 'plan.submit' && m.task_id === taskId);
}

function decide(peer: TestPeer, taskId: string, planId: string, decision: string, feedback?: string): Msg {
  return peer.send({ type: 'plan.decision', task_id: taskId, payload: { plan_id: planId, decision, ...(feedback ? { feedback } : {}) } });
}

describe('plans', () => {
  it('submits the plan, waits, and on approval runs each step with { step, action } and ends { executed } (spec: plans#decisions)', async () => {
    const peer = new TestPeer(testAgent());
    await peer.handshake();
    const submit = await planTask(peer, 'p1');
    expect(submit.payload.plan).toMatchObject({ ...draft, plan_id: expect.any(String) });
    expect(submit.sequence).toBe(3);
    expect(await peer.quiet(50, (m) => m.task_id === 'p1')).toEqual([]);
    const decision = decide(peer, 'p1', submit.payload.plan.plan_id, 'approved', 'go');
    const snap = await peer.reply(decision.message_id);
    expect(snap.payload).toMatchObject({ state: 'awaiting_approval', plan: { plan_id: submit.payload.plan.plan_id, state: 'pending' } });
    const result = await peer.result('p1');
    expect(result.payload).toEqual({ status: 'completed', output: { executed: ['write a', 'write b'] } });
    const kinds = peer
      .stream('p1')
      .map((m) => (m.type === 'task.event' ? `${m.payload.kind}:${JSON.stringify(m.payload.state ?? m.payload.data)}` : m.type));
    expect(kinds).toEqual([
      'task.accepted',
      'state:"running"',
      'plan.submit',
      'state:"running"',
      'output:{"step":0,"action":"write a"}',
      'output:{"step":1,"action":"write b"}',
      'task.result',
    ]);
    const status = peer.send({ type: 'task.status', task_id: 'p1' });
    expect((await peer.reply(status.message_id)).payload.plan.state).toBe('completed');
    expect(peer.violations(true)).toEqual([]);
  });

  it('ends the task failed PLAN_REJECTED on rejection, and refuses a later decision with TASK_TERMINAL (spec: plans#decisions)', async () => {
    const peer = new TestPeer(testAgent());
    await peer.handshake();
    const submit = await planTask(peer, 'p2');
    const planId = submit.payload.plan.plan_id;
    await peer.reply(decide(peer, 'p2', planId, 'rejected', 'too risky').message_id);
    expect((await peer.result('p2')).payload).toMatchObject({ status: 'failed', error: { code: 'PLAN_REJECTED', retryable: false } });
    const late = decide(peer, 'p2', planId, 'approved');
    expect((await peer.reply(late.message_id)).payload.code).toBe('TASK_TERMINAL');
    expect(peer.stream('p2').some((m) => m.payload.kind === 'output')).toBe(false);
  });

  it('takes a rejection during shutdown but refuses an approval with SHUTTING_DOWN (spec: shutdown#rejection)', async () => {
    const peer = new TestPeer(testAgent());
    await peer.handshake();
    const a = (await planTask(peer, 'r1')).payload.plan.plan_id;
    const b = (await planTask(peer, 'r2')).payload.plan.plan_id;
    const stop = peer.send({ type: 'shutdown.request', payload: { reason: 'test', grace_ms: 4000 } });
    expect((await peer.reply(stop.message_id)).payload.approve).toBe(true);
    const rejected = await peer.reply(decide(peer, 'r1', a, 'rejected', 'no').message_id);
    expect(rejected.type).toBe('task.snapshot');
    expect((await peer.result('r1')).payload).toMatchObject({ status: 'failed', error: { code: 'PLAN_REJECTED' } });
    const approved = await peer.reply(decide(peer, 'r2', b, 'approved').message_id);
    expect(approved.payload).toMatchObject({ code: 'SHUTTING_DOWN', retryable: true });
    expect((await peer.result('r2')).payload).toMatchObject({ status: 'cancelled', error: { code: 'SHUTTING_DOWN' } });
  });

  it('revises on needs_revision with a new plan_id, revision_of, feedback and a changed field (spec: plans#decisions)', async () => {
    const peer = new TestPeer(testAgent());
    await peer.handshake();
    const first = await planTask(peer, 'p3');
    const firstId = first.payload.plan.plan_id;
    await peer.reply(decide(peer, 'p3', firstId, 'needs_revision', 'name the files').message_id);
    const revision = await peer.waitFor((m) => m.type === 'plan.submit' && m.task_id === 'p3' && m.payload.revision_of === firstId);
    expect(revision.payload.plan.plan_id).not.toBe(firstId);
    expect(revision.payload.feedback).toBe('name the files');
    expect(revision.payload.plan.intent).not.toBe(draft.intent);
    // The old plan is no longer awaiting a decision.
    const stale = decide(peer, 'p3', firstId, 'approved');
    expect((await peer.reply(stale.message_id)).payload.code).toBe('PROTOCOL_VIOLATION');
    await peer.reply(decide(peer, 'p3', revision.payload.plan.plan_id, 'approved').message_id);
    expect((await peer.result('p3')).payload.status).toBe('completed');
    expect(peer.stream('p3').filter((m) => m.payload.kind === 'state' && m.payload.state === 'awaiting_approval')).toEqual([]);
    expect(peer.violations(true)).toEqual([]);
  });

  it('answers a decision for an unknown plan with PROTOCOL_VIOLATION and for an unknown task with UNKNOWN_TASK (spec: plans#decisions)', async () => {
    const peer = new TestPeer(testAgent());
    await peer.handshake();
    await planTask(peer, 'p4');
    expect((await peer.reply(decide(peer, 'p4', 'nope', 'approved').message_id)).payload.code).toBe('PROTOCOL_VIOLATION');
    expect((await peer.reply(decide(peer, 'zz', 'nope', 'approved').message_id)).payload.code).toBe('UNKNOWN_TASK');
  });

  it('withdraws a pending plan when the task is cancelled (spec: plans#plan-states)', async () => {
    const peer = new TestPeer(testAgent());
    await peer.handshake();
    const submit = await planTask(peer, 'p5');
    await peer.reply(peer.send({ type: 'task.cancel', task_id: 'p5' }).message_id);
    expect((await peer.result('p5')).payload).toEqual({ status: 'cancelled' });
    const status = peer.send({ type: 'task.status', task_id: 'p5' });
    expect((await peer.reply(status.message_id)).payload.plan).toEqual({ plan_id: submit.payload.plan.plan_id, state: 'withdrawn' });
    expect(peer.stream('p5').map((m) => m.payload.state ?? m.type)).toEqual([
      'task.accepted',
      'running',
      'plan.submit',
      'cancelling',
      'task.result',
    ]);
  });

  it('holds a late plan: a plan.holding reminder at request_timeout_ms, then every heartbeat_ms; a holding plan is decided like a pending one (spec: plans#holding)', async () => {
    const clock = new ManualClock();
    const peer = new TestPeer(testAgent({ clock, heartbeatMs: 1_000 }), { now: () => clock.now() });
    await peer.handshake({ params: { request_timeout_ms: 5_000, heartbeat_ms: 1_000 } });
    const submit = await planTask(peer, 'p6');
    const reminders = () => peer.stream('p6').filter((m) => m.payload.stage === 'plan.holding');
    await clock.advance(4_999);
    expect(reminders()).toHaveLength(0);
    await clock.advance(1);
    await peer.until(() => reminders().length === 1);
    await clock.advance(1_000);
    await peer.until(() => reminders().length === 2);
    const status = peer.send({ type: 'task.status', task_id: 'p6' });
    expect((await peer.reply(status.message_id)).payload.plan.state).toBe('holding');
    await peer.reply(decide(peer, 'p6', submit.payload.plan.plan_id, 'approved').message_id);
    await flush();
    expect((await peer.result('p6')).payload.status).toBe('completed');
    const count = reminders().length;
    await clock.advance(5_000);
    expect(reminders()).toHaveLength(count);
    expect(peer.violations(true)).toEqual([]);
  });

  it('ends a task awaiting approval timed_out at its deadline and withdraws the plan (spec: tasks#deadlines)', async () => {
    const peer = new TestPeer(testAgent());
    await peer.handshake();
    await planTask(peer, 'p7', { timeout_ms: 100 });
    expect((await peer.result('p7')).payload).toMatchObject({ status: 'timed_out', error: { code: 'DEADLINE_EXCEEDED' } });
    const status = peer.send({ type: 'task.status', task_id: 'p7' });
    expect((await peer.reply(status.message_id)).payload.plan.state).toBe('withdrawn');
  });
});
