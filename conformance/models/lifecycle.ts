/**
 * The task lifecycle command model: submits, duplicates, keyed retries, cancels, status and resume
 * requests, and pairs of submissions whose order a fast-check scheduler picks; after each run the
 * history, exactly-once and no-lost-task checks (spec: tasks, idempotency, resume).
 */
import fc from 'fast-check';
import { judgeHistory, type StreamRule } from '../judge/history.ts';
import type { CaseContext } from '../context.ts';
import type { Peer, Received } from '../peer.ts';
import type { Wire } from '../session-state.ts';
import { collectUntilResult, describeMessage, streamOf } from '../steps.ts';
import { EARLY_TOLERANCE_MS } from '../verdict.ts';
import { expect, reply } from './common.ts';

// submissions in an order the scheduler picks.

export interface TaskModel {
  kind: 'counter' | 'sleep';
  request: Wire;
  reply?: Received;
  key?: string;
  counterKey?: string;
  /** When a sleep's request was sent, on the transcript's clock. */
  sentAt?: number;
  state: 'running' | 'completed' | 'cancelled' | 'timed_out';
}
export interface LifeModel {
  tasks: TaskModel[];
}
export interface LifeReal {
  ctx: CaseContext;
  peer: Peer;
  run: number;
  /** Sleep tasks still running, across runs (a failed run leaves some behind). */
  leftovers: Set<string>;
  scheduler: fc.Scheduler;
  keys: Set<string>;
  taskIds: Set<string>;
  n: { value: number };
  /** The agent's max_task_seconds in milliseconds (Infinity if its card gives none). */
  taskLimitMs: number;
}

/** The real side of one run of the model on `peer`'s session. */
export function lifeReal(ctx: CaseContext, peer: Peer, run: number, leftovers: Set<string>, scheduler: fc.Scheduler): LifeReal {
  const limit = Number(peer.state.card?.limits?.max_task_seconds);
  const taskLimitMs = limit > 0 ? limit * 1000 : Number.POSITIVE_INFINITY;
  return { ctx, peer, run, leftovers, scheduler, keys: new Set(), taskIds: new Set(), n: { value: 0 }, taskLimitMs };
}

function fresh(r: LifeReal, what: string): string {
  return `${what}-${r.peer.ids.task('p')}-r${r.run}-${++r.n.value}`;
}

async function submitCounter(m: LifeModel, r: LifeReal, keyed: boolean): Promise<void> {
  const peer = r.peer;
  const counterKey = fresh(r, 'c');
  const taskId = fresh(r, 't');
  const extra: Partial<Wire> = { task_id: taskId };
  if (keyed) extra.idempotency_key = counterKey;
  const request = peer.envelope('task.request', { capability: 'tap.test.counter', input: { key: counterKey } }, extra);
  await peer.send(request);
  r.taskIds.add(taskId);
  r.keys.add(counterKey);
  const got = await reply(peer, request);
  expect(got.msg.type === 'task.accepted', `a new counter task got ${describeMessage(got.msg)}`, 'TAP-TASK-002');
  const res = await collectUntilResult(peer, taskId);
  expect(res.ok, `the counter task ${taskId} got no result`, 'TAP-TASK-007');
  const out = res.ok ? res.value.result.msg.payload : undefined;
  expect(
    out?.status === 'completed' && out.output?.count === 1,
    `a fresh counter key ended ${res.ok ? describeMessage(res.value.result.msg) : 'without result'}, not count 1`,
    'TAP-CONF-009',
  );
  m.tasks.push({ kind: 'counter', request, reply: got, key: keyed ? counterKey : undefined, counterKey, state: 'completed' });
}

class SubmitCounter implements fc.AsyncCommand<LifeModel, LifeReal> {
  constructor(readonly keyed: boolean) {}
  check = () => true;
  run = (m: LifeModel, r: LifeReal) => submitCounter(m, r, this.keyed);
  toString = () => `submit counter${this.keyed ? ' (keyed)' : ''}`;
}

export class SubmitSleep implements fc.AsyncCommand<LifeModel, LifeReal> {
  check = (m: Readonly<LifeModel>) => m.tasks.filter((t) => t.state === 'running').length < 3;
  async run(m: LifeModel, r: LifeReal) {
    const taskId = fresh(r, 's');
    const request = r.peer.envelope('task.request', { capability: 'tap.test.sleep', input: { ms: 120_000 } }, { task_id: taskId });
    const sentAt = r.ctx.transcript.now();
    await r.peer.send(request);
    r.taskIds.add(taskId);
    r.leftovers.add(taskId);
    const got = await reply(r.peer, request);
    expect(got.msg.type === 'task.accepted', `a sleep task got ${describeMessage(got.msg)}`, 'TAP-TASK-002');
    m.tasks.push({ kind: 'sleep', request, reply: got, sentAt, state: 'running' });
  }
  toString = () => 'submit sleep';
}

/** Whether `got` is the TASK_TERMINAL error a task.cancel of an ended task gets (spec: cancellation). */
const isTaskTerminal = (got: Received): boolean => got.msg.type === 'error' && got.msg.payload.code === 'TASK_TERMINAL';

/**
 * Whether running sleep `t` ended timed_out, as an answer says it ended: an agent with a short
 * max_task_seconds (a WebSocket or NATS agent started for certification with 2 s) ends the model's
 * long sleeps mid-run when the run is slow. Its timed_out result must not come before that limit
 * has passed since the request was sent (TAP-TASK-015); the model then holds it as timed_out.
 */
async function endedByLimit(t: TaskModel, r: LifeReal): Promise<boolean> {
  const id = t.request.task_id!;
  const res = await collectUntilResult(r.peer, id);
  if (!res.ok || res.value.result.msg.payload.status !== 'timed_out') return false;
  const after = res.value.result.at - t.sentAt!;
  expect(
    after >= r.taskLimitMs - EARLY_TOLERANCE_MS,
    `the sleep ${id} ended timed_out ${Math.round(after)} ms after its request, before max_task_seconds ${r.taskLimitMs / 1000} had passed`,
    'TAP-TASK-015',
  );
  t.state = 'timed_out';
  r.leftovers.delete(id);
  return true;
}

class Duplicate implements fc.AsyncCommand<LifeModel, LifeReal> {
  constructor(readonly i: number) {}
  check = (m: Readonly<LifeModel>) => m.tasks.length > 0;
  async run(m: LifeModel, r: LifeReal) {
    const t = m.tasks[this.i % m.tasks.length]!;
    const mark = r.peer.mark();
    await r.peer.send(t.request);
    const again = await r.peer.waitFor((x) => x.index >= mark && x.msg.reply_to === t.request.message_id, 'the re-sent reply');
    expect(again.ok, `a duplicate task.request got no reply: ${again.ok ? '' : again.outcome.detail}`, 'TAP-IDEM-001');
    expect(
      again.ok && again.value.text === t.reply!.text,
      'a duplicate task.request was not answered with the original reply, byte for byte',
      'TAP-IDEM-001',
    );
  }
  toString = () => `duplicate #${this.i}`;
}

class RetryKey implements fc.AsyncCommand<LifeModel, LifeReal> {
  constructor(readonly i: number) {}
  check = (m: Readonly<LifeModel>) => m.tasks.some((t) => t.key !== undefined);
  async run(m: LifeModel, r: LifeReal) {
    const keyed = m.tasks.filter((t) => t.key !== undefined);
    const t = keyed[this.i % keyed.length]!;
    const request = r.peer.envelope('task.request', t.request.payload, { task_id: fresh(r, 't'), idempotency_key: t.key });
    await r.peer.send(request);
    const got = await reply(r.peer, request);
    expect(
      got.msg.type === 'task.snapshot' && got.msg.task_id === t.request.task_id,
      `a retry under key ${t.key} got ${describeMessage(got.msg)}, not the snapshot of ${t.request.task_id}`,
      'TAP-IDEM-005',
    );
  }
  toString = () => `retry key #${this.i}`;
}

export class Cancel implements fc.AsyncCommand<LifeModel, LifeReal> {
  constructor(readonly i: number) {}
  check = (m: Readonly<LifeModel>) => m.tasks.length > 0;
  async run(m: LifeModel, r: LifeReal) {
    const t = m.tasks[this.i % m.tasks.length]!;
    const sent = await r.peer.post('task.cancel', {}, { task_id: t.request.task_id });
    const got = await reply(r.peer, sent);
    const terminal = isTaskTerminal(got);
    if (t.state === 'running' && terminal && (await endedByLimit(t, r))) return;
    if (t.state === 'completed' || t.state === 'timed_out') {
      expect(terminal, `a cancel of a ${t.state} task got ${describeMessage(got.msg)}, not TASK_TERMINAL`, 'TAP-CAN-007');
      return;
    }
    expect(
      got.msg.type === 'task.snapshot',
      `a cancel of a ${t.state} task got ${describeMessage(got.msg)}, not a snapshot`,
      t.state === 'cancelled' ? 'TAP-CAN-006' : 'TAP-CAN-002',
    );
    if (t.state === 'running') {
      const res = await collectUntilResult(r.peer, t.request.task_id!);
      expect(
        res.ok && res.value.result.msg.payload.status === 'cancelled',
        `a cancelled sleep ended ${res.ok ? describeMessage(res.value.result.msg) : 'without result'}`,
        res.ok ? 'TAP-CAN-003' : 'TAP-TASK-007',
      );
      t.state = 'cancelled';
      r.leftovers.delete(t.request.task_id!);
    }
  }
  toString = () => `cancel #${this.i}`;
}

export class Status implements fc.AsyncCommand<LifeModel, LifeReal> {
  constructor(readonly i: number) {}
  check = (m: Readonly<LifeModel>) => m.tasks.length > 0;
  async run(m: LifeModel, r: LifeReal) {
    const t = m.tasks[this.i % m.tasks.length]!;
    const sent = await r.peer.post('task.status', {}, { task_id: t.request.task_id });
    const got = await reply(r.peer, sent);
    expect(got.msg.type === 'task.snapshot', `task.status got ${describeMessage(got.msg)}`, 'TAP-TASK-011');
    const p = got.msg.payload;
    if (t.state === 'running' && p.state === 'timed_out') await endedByLimit(t, r);
    const terminal = t.state !== 'running';
    expect(
      terminal === (p.result !== undefined),
      `the snapshot of a ${t.state} task ${terminal ? 'lacks' : 'carries'} a result`,
      'TAP-TASK-012',
    );
    if (terminal) expect(p.state === t.state, `the snapshot says ${p.state}, the task ended ${t.state}`, 'TAP-TASK-011');
    else expect(p.state === 'accepted' || p.state === 'running', `a running sleep shows state ${p.state}`, 'TAP-TASK-011');
    expect(
      p.last_sequence === r.peer.state.lastSequence(t.request.task_id!),
      `last_sequence ${p.last_sequence} is not the last sequence sent (${r.peer.state.lastSequence(t.request.task_id!)})`,
      'TAP-TASK-011',
    );
  }
  toString = () => `status #${this.i}`;
}

class Resume implements fc.AsyncCommand<LifeModel, LifeReal> {
  constructor(
    readonly i: number,
    readonly back: number,
  ) {}
  check = (m: Readonly<LifeModel>) => m.tasks.length > 0;
  async run(m: LifeModel, r: LifeReal) {
    const t = m.tasks[this.i % m.tasks.length]!;
    const id = t.request.task_id!;
    const last = r.peer.state.lastSequence(id);
    const from = Math.max(0, last - this.back);
    const mark = r.peer.mark();
    const sent = await r.peer.post('task.resume', { last_sequence: from }, { task_id: id });
    const got = await reply(r.peer, sent);
    expect(got.msg.type === 'task.snapshot', `task.resume got ${describeMessage(got.msg)}`, 'TAP-RES-002');
    if (last > from) {
      const done = await r.peer.waitFor(
        (x) => x.index >= mark && x.msg.task_id === id && x.msg.sequence === last,
        `the replay up to ${last}`,
      );
      expect(done.ok, `task.resume from ${from} did not replay up to ${last}`, 'TAP-RES-002');
    }
    const originals = new Map(streamOf(r.peer, id).map((x) => [x.msg.sequence, x.text]));
    for (const x of r.peer.since(mark)) {
      if (x.msg.task_id !== id || x.msg.sequence === undefined || x.msg.sequence > last) continue;
      expect(
        x.text === originals.get(x.msg.sequence),
        `the replay of ${id} sequence ${x.msg.sequence} differs from the original`,
        'TAP-RES-002',
      );
    }
  }
  toString = () => `resume #${this.i} back ${this.back}`;
}

/** Two submissions whose order on the wire the scheduler decides: either order is allowed. */
class Pair implements fc.AsyncCommand<LifeModel, LifeReal> {
  check = () => true;
  async run(m: LifeModel, r: LifeReal) {
    const a = r.scheduler.schedule(Promise.resolve('a'), 'first counter').then(() => submitCounter(m, r, true));
    const b = r.scheduler.schedule(Promise.resolve('b'), 'second counter').then(() => submitCounter(m, r, false));
    await r.scheduler.waitIdle();
    await Promise.all([a, b]);
  }
  toString = () => 'pair (scheduled)';
}

export const lifecycleCommands = [
  fc.boolean().map((k) => new SubmitCounter(k)),
  fc.constant(new SubmitSleep()),
  fc.nat(20).map((i) => new Duplicate(i)),
  fc.nat(20).map((i) => new RetryKey(i)),
  fc.nat(20).map((i) => new Cancel(i)),
  fc.nat(20).map((i) => new Status(i)),
  fc.tuple(fc.nat(20), fc.nat(4)).map(([i, b]) => new Resume(i, b)),
  fc.constant(new Pair()),
];

/** The requirement each rule of the history judge stands for. */
const RULE_REQUIREMENT: Record<StreamRule, string | undefined> = {
  message: undefined,
  direction: 'TAP-MSG-001',
  'message-id-reuse': 'TAP-ENV-006',
  'sequence-missing': 'TAP-EVT-004',
  'sequence-unexpected': 'TAP-EVT-004',
  'sequence-start': 'TAP-EVT-003',
  'sequence-gap': 'TAP-EVT-004',
  'sequence-duplicate': 'TAP-EVT-004',
  transition: 'TAP-TASK-005',
  'state-event': 'TAP-EVT-001',
  plan: undefined,
  'after-result': 'TAP-TASK-006',
  'result-missing': 'TAP-TASK-007',
  snapshot: 'TAP-TASK-012',
  quiet: 'TAP-QUIET-101',
};

/** After a run: every sleep cancelled, then the history, exactly-once and no-lost-task checks. */
export async function finishRun(m: LifeModel, r: LifeReal, mark: number): Promise<void> {
  for (const t of m.tasks.filter((x) => x.state === 'running')) {
    const sent = await r.peer.post('task.cancel', {}, { task_id: t.request.task_id });
    if (isTaskTerminal(await reply(r.peer, sent)) && (await endedByLimit(t, r))) continue;
    const res = await collectUntilResult(r.peer, t.request.task_id!);
    expect(res.ok, `the cancelled task ${t.request.task_id} got no result`, 'TAP-TASK-007');
    t.state = 'cancelled';
    r.leftovers.delete(t.request.task_id!);
  }
  for (const key of r.keys) {
    const taskId = fresh(r, 'probe');
    const sent = await r.peer.post('task.request', { capability: 'tap.test.counter', input: { key } }, { task_id: taskId });
    await reply(r.peer, sent);
    const res = await collectUntilResult(r.peer, taskId);
    const count = res.ok ? res.value.result.msg.payload.output?.count : undefined;
    expect(
      count === 2,
      `counter ${key} had run ${typeof count === 'number' ? count - 1 : '?'} times for one request (one effect per idempotency key)`,
      // A keyed counter ran again under its key; an unkeyed one, for a duplicate message.
      m.tasks.some((t) => t.counterKey === key && t.key !== undefined) ? 'TAP-IDEM-005' : 'TAP-IDEM-001',
    );
  }
  const msgs = r.peer
    .since(mark)
    .filter((x) => x.msg.task_id === undefined || r.taskIds.has(x.msg.task_id))
    .map((x) => x.msg);
  const violations = judgeHistory(msgs, { complete: true });
  const v = violations[0];
  expect(!v, `the task history breaks a rule (${v?.rule}): ${v?.message}`, v ? RULE_REQUIREMENT[v.rule] : undefined);
}
