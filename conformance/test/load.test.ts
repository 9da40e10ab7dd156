/**
 * The suite's own load on a shared agent (conformance/load.ts): what the task ledger counts, how
 * long the tasks a finished case left running keep counting, when a BUSY is the suite's doing,
 * and how the gate starts cases within the agent's limits (spec: limits#concurrency,
 * conformance#verdicts TAP-CONF-002).
 */
import { describe, expect, it } from 'vitest';
import type { Case } from '../case.ts';
import { capacityOf, limitsOf, TaskGate, TaskLedger } from '../load.ts';
import { judge } from '../runner.ts';
import { SessionState, type Wire } from '../session-state.ts';
import { fail, pass } from '../verdict.ts';

let n = 0;
/** A message with just the members the ledger reads. */
function msg(type: string, extra: Partial<Wire> = {}, payload: Record<string, unknown> = {}): Wire {
  return { protocol: 'tap/1.0', message_id: `m-${++n}`, type, source: 'a', target: 'b', timestamp: '', payload, ...extra };
}
const request = (taskId: string, capability = 'tap.test.echo', input: unknown = 1) =>
  msg('task.request', { task_id: taskId }, { capability, input });
const reply = (to: Wire, type: string, extra: Partial<Wire> = {}, payload: Record<string, unknown> = {}) =>
  msg(type, { reply_to: to.message_id, task_id: to.task_id, ...extra }, payload);
const busy = (to: Wire) => reply(to, 'error', {}, { code: 'BUSY', message: 'full', retryable: true, fatal: false });

/** A ledger on a clock the test moves. */
function ledger(limits = {}) {
  const clock = { t: 1_000_000 };
  return { l: new TaskLedger(limits, 1, () => clock.t), clock };
}

describe('the task ledger counts what the suite holds at the agent', () => {
  it('from a request to its result, and not a request the agent refused', () => {
    const { l } = ledger();
    const s = new SessionState('tap-conform');
    const a = request('a');
    const b = request('b');
    l.sent('case#1', s, a, false);
    l.sent('case#1', s, b, false);
    expect(l.count()).toBe(2);
    l.received('case#1', s, reply(a, 'task.accepted'));
    l.received('case#1', s, msg('task.result', { task_id: 'a' }));
    l.received('case#1', s, reply(b, 'error', {}, { code: 'INVALID_MESSAGE' }));
    expect(l.count()).toBe(0);
  });

  it('not a retry answered with the snapshot of the task its key names', () => {
    const { l } = ledger();
    const s = new SessionState('tap-conform');
    const first = request('first');
    l.sent('case#1', s, first, false);
    const retry = request('retry');
    l.sent('case#1', s, retry, false);
    l.received('case#1', s, reply(retry, 'task.snapshot', { task_id: 'first' }, { state: 'running' }));
    expect(l.countOf('case#1')).toBe(1);
  });

  it('not a request sent invalid on purpose, unless the agent runs it', () => {
    const { l } = ledger();
    const s = new SessionState('tap-conform');
    l.sent('case#1', s, request('forged'), true);
    expect(l.count()).toBe(0);
    l.received('case#1', s, msg('task.accepted', { task_id: 'forged', sequence: 1 }));
    expect(l.count()).toBe(1);
  });

  it('until the session ends with a farewell or a fatal error', () => {
    const { l } = ledger();
    const s = new SessionState('tap-conform');
    const t = new SessionState('tap-conform');
    l.sent('case#1', s, request('a', 'tap.test.sleep', { ms: 60_000 }), false);
    l.sent('case#2', t, request('b', 'tap.test.sleep', { ms: 60_000 }), false);
    l.received('case#1', s, msg('session.farewell'));
    l.sent('case#2', t, msg('error', {}, { code: 'PROTOCOL_ERROR', fatal: true }), false);
    expect(l.count()).toBe(0);
  });
});

describe('what a finished case left running keeps counting', () => {
  it('until it ends by its own definition: an echo at once, a sleep after its ms', () => {
    const { l, clock } = ledger();
    const s = new SessionState('tap-conform');
    s.resumeWindowMs = 300_000;
    l.sent('case#1', s, request('echo'), false);
    l.sent('case#1', s, request('sleep', 'tap.test.sleep', { ms: 10_000 }), false);
    l.release('case#1');
    expect(l.count()).toBe(2);
    clock.t += 600;
    expect(l.count()).toBe(1);
    clock.t += 12_000;
    expect(l.count()).toBe(0);
  });

  it("until its orphaned session's resume window has passed, for a task of unknown length", () => {
    const { l, clock } = ledger();
    const s = new SessionState('tap-conform');
    s.resumeWindowMs = 5_000;
    l.sent('case#1', s, request('plan', 'tap.test.plan', {}), false);
    l.release('case#1');
    expect(l.nextRelease()).toBe(clock.t + 5_000 * 1.2 + 500);
    clock.t += 6_600;
    expect(l.count()).toBe(0);
  });

  it('until the grace period of a shutdown the agent approved', () => {
    const { l, clock } = ledger();
    const s = new SessionState('tap-conform');
    l.sent('case#1', s, request('sleep', 'tap.test.sleep', { ms: 600_000 }), false);
    const shutdown = msg('shutdown.request', {}, { reason: 'test', grace_ms: 300 });
    l.sent('case#1', s, shutdown, false);
    l.received('case#1', s, reply(shutdown, 'shutdown.response', {}, { approve: true }));
    l.release('case#1');
    clock.t += 900;
    expect(l.count()).toBe(0);
  });
});

describe('a BUSY the suite could have caused (TAP-CONF-002)', () => {
  it('is one answered while the suite held as many tasks as limits.max_concurrent_tasks', () => {
    const { l } = ledger({ total: 2 });
    const s = new SessionState('tap-conform');
    l.sent('other#1', new SessionState('tap-conform'), request('x'), false);
    l.sent('case#1', s, request('a'), false);
    const third = request('b');
    l.sent('case#1', s, third, false);
    expect(l.received('case#1', s, busy(third))).toMatch(
      /answered BUSY \(correctly\) while the suite held 2 tasks at the agent, whose limits\.max_concurrent_tasks is 2/,
    );
  });

  it('is not one answered below every limit: that BUSY is the agent’s', () => {
    const { l } = ledger({ total: 8, perPrincipal: 8 });
    const s = new SessionState('tap-conform');
    const a = request('a');
    l.sent('case#1', s, a, false);
    expect(l.received('case#1', s, busy(a))).toBeUndefined();
  });

  it('counts the sessions of one key as one principal', () => {
    const { l } = ledger({ total: 64, perPrincipal: 1 });
    const one = new SessionState('tap-conform.hmac');
    const two = new SessionState('tap-conform.hmac');
    one.principal = two.principal = 'key k1';
    l.sent('a#1', one, request('a'), false);
    const b = request('b');
    l.sent('b#1', two, b, false);
    expect(l.received('b#1', two, busy(b))).toMatch(/1 task under one principal, and the agent's limits\.max_tasks_per_principal is 1/);
  });

  it('is one in a session whose limit the agent set below the proposal, not one the case asked for', () => {
    const { l } = ledger({ total: 64 });
    const lowered = new SessionState('tap-conform');
    lowered.params = { max_concurrent_tasks: 1 };
    lowered.proposedConcurrency = 16;
    l.sent('case#1', lowered, request('a'), false);
    const b = request('b');
    l.sent('case#1', lowered, b, false);
    expect(l.received('case#1', lowered, busy(b))).toMatch(/1 task in a session whose max_concurrent_tasks the agent set to 1/);
    const asked = new SessionState('tap-conform');
    asked.params = { max_concurrent_tasks: 1 };
    asked.proposedConcurrency = 1;
    l.sent('case#2', asked, request('c'), false);
    const d = request('d');
    l.sent('case#2', asked, d, false);
    expect(l.received('case#2', asked, busy(d))).toBeUndefined();
  });

  it('in a case that fills the limits on purpose, is one only other cases’ tasks explain', () => {
    const { l } = ledger({ total: 2 });
    const s = new SessionState('tap-conform');
    l.sent('flood#1', s, request('a'), false);
    l.sent('flood#1', s, request('b'), false);
    const c = request('c');
    l.sent('flood#1', s, c, false);
    expect(l.received('flood#1', s, busy(c), true)).toBeUndefined();
    l.sent('left#1', new SessionState('tap-conform'), request('x'), false);
    l.sent('left#1', new SessionState('tap-conform'), request('y'), false);
    const d = request('d');
    l.sent('flood#1', s, d, false);
    expect(l.received('flood#1', s, busy(d), true)).toMatch(/held 2 tasks at the agent/);
  });

  it('turns the FAIL of the case that met it into ERROR, and leaves a PASS alone', () => {
    const c: Case = { id: 'x.y', title: 't', level: 'MUST', profile: 'core', spec: 's#a', requirements: [], run: async () => pass() };
    const why = 'the agent answered BUSY (correctly) while the suite held 8 tasks at the agent, whose limits.max_concurrent_tasks is 8';
    const failed = judge(c, fail('the agent did not accept a tap.test.sleep task: error BUSY'), [], [why]);
    expect(failed.verdict).toBe('ERROR');
    expect(failed.detail).toContain(why);
    expect(failed.detail).toContain('the case then saw: the agent did not accept a tap.test.sleep task');
    expect(judge(c, pass(), [], [why]).verdict).toBe('PASS');
    expect(judge(c, fail('no result'), []).verdict).toBe('FAIL');
  });
});

describe('the gate starts cases within the agent’s limits', () => {
  const tick = () => new Promise((r) => setTimeout(r, 10));

  it('admits cases while their tasks fit, in turn, and never holds back one that holds no task', async () => {
    const { l } = ledger({ total: 4 });
    const gate = new TaskGate(l, 4, 30_000);
    const admitted: string[] = [];
    const enter = (owner: string, need: number) => void gate.enter(owner, need).then(() => admitted.push(owner));
    enter('a', 3);
    enter('b', 2);
    enter('c', 1);
    enter('d', 0);
    await tick();
    // b does not fit beside a; c waits its turn behind b; d holds no task.
    expect(admitted).toEqual(['a', 'd']);
    gate.leave('a');
    await tick();
    expect(admitted).toEqual(['a', 'd', 'b', 'c']);
  });

  it('counts what a running case holds beyond what it declared', async () => {
    const { l } = ledger({ total: 3 });
    const gate = new TaskGate(l, 3, 30_000);
    await gate.enter('a#1', 1);
    const s = new SessionState('tap-conform');
    for (const id of ['t1', 't2', 't3']) l.sent('a#1', s, request(id, 'tap.test.sleep', { ms: 60_000 }), false);
    let admitted = false;
    void gate.enter('b#1', 1).then(() => (admitted = true));
    await tick();
    expect(admitted).toBe(false);
    l.received('a#1', s, msg('task.result', { task_id: 't1' }));
    await tick();
    expect(admitted).toBe(true);
  });

  it('waits for tasks a finished case left running, at most its longest wait when nothing else runs', async () => {
    const clock = { t: 1_000_000 };
    const l = new TaskLedger({ total: 1 }, 1, () => clock.t);
    const gate = new TaskGate(l, 1, 50, () => clock.t);
    const s = new SessionState('tap-conform');
    s.resumeWindowMs = 300_000;
    l.sent('left#1', s, request('long', 'tap.test.sleep', { ms: 600_000 }), false);
    l.release('left#1');
    let admitted = false;
    void gate.enter('next#1', 1).then(() => (admitted = true));
    await tick();
    // The leftover counts for minutes: the case does not wait for it longer than allowed.
    expect(admitted).toBe(true);
    expect(l.count()).toBe(1);
  });

  it('waits until a task a finished case left running has ended, when that comes soon', async () => {
    const clock = { t: 1_000_000 };
    const l = new TaskLedger({ total: 1 }, 1, () => clock.t);
    const gate = new TaskGate(l, 1, 30_000, () => clock.t);
    l.sent('left#1', new SessionState('tap-conform'), request('echo'), false);
    l.release('left#1');
    let admitted = false;
    void gate.enter('next#1', 1).then(() => (admitted = true));
    await tick();
    expect(admitted).toBe(false);
    clock.t += 600;
    await new Promise((r) => setTimeout(r, 600));
    expect(admitted).toBe(true);
  });
});

describe('limits of a card', () => {
  it('reads max_concurrent_tasks, max_tasks_per_principal and the per-session limits, and the capacity is the lowest shared one', () => {
    const card = { limits: { max_concurrent_tasks: 8, max_tasks_per_principal: 4, max_tasks_per_session: 2 } };
    expect(limitsOf(card, { max_concurrent_tasks: 16 })).toEqual({ total: 8, perPrincipal: 4, perSession: 2 });
    expect(capacityOf(limitsOf(card))).toBe(4);
    expect(capacityOf(limitsOf({ limits: { max_concurrent_tasks: 'many' } }))).toBe(Number.POSITIVE_INFINITY);
  });
});
