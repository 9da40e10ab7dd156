/**
 * Property-based cases: fast-check command models of the handshake and of the task lifecycle,
 * with a scheduler that reorders independent requests. Each run is checked as it goes and, at its
 * end, against the task rules (checkHistory), the exactly-once rule (tap.test.counter) and the
 * no-lost-task rule. A failure shrinks to a minimal command sequence and reports the seed, the
 * path and the command that replays it (spec: conformance#properties).
 */
import fc from 'fast-check';
import { checkHistory } from '../reference/core/history.ts';
import { defineCase, type Case } from './case.ts';
import type { CaseContext } from './context.ts';
import type { Peer, Received } from './peer.ts';
import type { Wire } from './session-state.ts';
import { collectUntilResult, describeMessage, handshake, initPayload, streamOf } from './steps.ts';
import { fail, harnessError, pass, type Outcome } from './verdict.ts';

/** A property's own failure: thrown inside fast-check runs, turned into an Outcome at the end. */
export class Broken extends Error {
  override name = 'Broken';
}

function expect(ok: boolean, message: string): void {
  if (!ok) throw new Broken(message);
}

async function reply(peer: Peer, sent: Wire): Promise<Received> {
  const r = await peer.reply(sent);
  if (!r.ok) throw new Broken(r.outcome.detail);
  return r.value;
}

/** Runs a property with the run's seed, path and run count; turns the result into an Outcome. */
export async function runProperty<T>(ctx: CaseContext, caseId: string, prop: fc.IAsyncPropertyWithHooks<T>, budgetMs: number): Promise<Outcome> {
  const params: fc.Parameters<T> = {
    seed: ctx.env.seed,
    numRuns: ctx.env.runs,
    interruptAfterTimeLimit: budgetMs,
    markInterruptAsFailure: false,
    endOnFailure: false,
  };
  if (ctx.env.path !== undefined) params.path = ctx.env.path;
  const out = await fc.check(prop, params);
  if (!out.failed) return pass(`${out.numRuns} runs${out.interrupted ? ' (stopped early by the time budget)' : ''}, seed ${out.seed}`);
  const err = out.errorInstance;
  if (!(err instanceof Broken)) {
    return harnessError(`the property threw: ${err instanceof Error ? err.message : String(err)}`);
  }
  const replay = ctx.env.replay(caseId, `--path ${out.counterexamplePath}`);
  const example = fc.stringify(out.counterexample);
  ctx.note(`shrunk counterexample after ${out.numShrinks} shrinks: ${example}`);
  return fail(
    `${err.message} — seed ${out.seed}, path ${out.counterexamplePath}; replay: ${replay}`,
    'every run obeys the rule',
    `${err.message} after ${example.slice(0, 600)}`,
  );
}

// ---------------------------------------------------------------------------------------------
// Handshake model: a connection's phase, and what each message must get in each phase.

type Phase = 'fresh' | 'acked' | 'established' | 'closed';
interface HsModel {
  phase: Phase;
}
interface HsReal {
  ctx: CaseContext;
  peer: Peer;
}

const FAKE_SESSION = 'AAAAAAAAAAAAAAAAAAAAAA';

class PingCmd implements fc.AsyncCommand<HsModel, HsReal> {
  check = (m: Readonly<HsModel>) => m.phase !== 'closed';
  async run(_m: HsModel, r: HsReal) {
    const p = await r.peer.ping();
    expect(p.ok, `a ping got no pong: ${p.ok ? '' : p.outcome.detail}`);
  }
  toString = () => 'ping';
}

class InitCmd implements fc.AsyncCommand<HsModel, HsReal> {
  constructor(readonly heartbeat: number, readonly maxBytes: number, readonly streaming: boolean) {}
  check = (m: Readonly<HsModel>) => m.phase !== 'closed';
  async run(m: HsModel, r: HsReal) {
    const peer = r.peer;
    const payload = initPayload(peer, { params: { heartbeat_ms: this.heartbeat, max_message_bytes: this.maxBytes, streaming: this.streaming } });
    const sent = await peer.post('handshake.init', payload);
    const got = await reply(peer, sent);
    if (m.phase !== 'fresh') {
      expect(got.msg.type === 'error' && got.msg.payload.code === 'PROTOCOL_VIOLATION', `a handshake.init in phase ${m.phase} got ${describeMessage(got.msg)}, not PROTOCOL_VIOLATION`);
      return;
    }
    expect(got.msg.type === 'handshake.ack', `a valid handshake.init got ${describeMessage(got.msg)}`);
    const p = got.msg.payload.params ?? {};
    const own = got.msg.payload.agent?.limits ?? {};
    // The larger of both sides, clamped to [1000, 60000]: at least the clamped proposal.
    const floor = Math.min(60000, Math.max(1000, this.heartbeat));
    expect(p.heartbeat_ms >= floor && p.heartbeat_ms <= 60000, `heartbeat_ms ${this.heartbeat} became ${p.heartbeat_ms}`);
    expect(p.max_message_bytes === Math.min(this.maxBytes, own.max_message_bytes ?? this.maxBytes), `max_message_bytes ${this.maxBytes} became ${p.max_message_bytes} (the card says ${own.max_message_bytes})`);
    expect(this.streaming || p.streaming === false, 'streaming: false was not kept');
    peer.state.sessionId = got.msg.payload.session_id;
    peer.state.agentId = got.msg.payload.agent?.agent_id ?? peer.state.agentId;
    peer.state.params = p;
    peer.state.version = got.msg.payload.version;
    peer.state.bound = true;
    m.phase = 'acked';
  }
  toString = () => `init(heartbeat ${this.heartbeat}, max ${this.maxBytes}, streaming ${this.streaming})`;
}

class ReadyCmd implements fc.AsyncCommand<HsModel, HsReal> {
  constructor(readonly matching: boolean) {}
  check = (m: Readonly<HsModel>) => m.phase !== 'closed';
  async run(m: HsModel, r: HsReal) {
    const peer = r.peer;
    const params = peer.state.params ? { ...peer.state.params } : { heartbeat_ms: 15000, max_message_bytes: 1048576, max_concurrent_tasks: 4, request_timeout_ms: 30000, streaming: true, integrity: 'none' };
    if (!this.matching) params.max_concurrent_tasks = Number(params.max_concurrent_tasks) + 1;
    const extra = peer.state.bound ? {} : { session_id: FAKE_SESSION };
    const sent = await peer.post('handshake.ready', { params }, extra, this.matching ? {} : { deliberate: 'params that differ from the ack' });
    const got = await reply(peer, sent);
    if (m.phase === 'acked' && this.matching) {
      expect(got.msg.type === 'handshake.go', `a matching handshake.ready got ${describeMessage(got.msg)}`);
      peer.state.established = true;
      m.phase = 'established';
      return;
    }
    expect(got.msg.type === 'error' && got.msg.payload.code === 'PROTOCOL_VIOLATION', `a handshake.ready (${this.matching ? 'matching' : 'mismatched'}) in phase ${m.phase} got ${describeMessage(got.msg)}, not PROTOCOL_VIOLATION`);
    if (m.phase === 'acked') {
      expect(got.msg.payload.fatal === true, 'PROTOCOL_VIOLATION for a mismatched ready is not fatal');
      const closed = await peer.waitClosed(r.ctx.scaled(5000));
      expect(closed, 'the transport stayed open after the fatal PROTOCOL_VIOLATION');
      m.phase = 'closed';
    }
  }
  toString = () => `ready(${this.matching ? 'matching' : 'mismatched'})`;
}

class EarlyRequestCmd implements fc.AsyncCommand<HsModel, HsReal> {
  check = (m: Readonly<HsModel>) => m.phase !== 'closed';
  async run(m: HsModel, r: HsReal) {
    const peer = r.peer;
    const extra: Partial<Wire> = { task_id: peer.ids.task('probe') };
    if (!peer.state.bound) extra.session_id = FAKE_SESSION;
    const sent = await peer.post('task.status', {}, extra);
    const got = await reply(peer, sent);
    const want = m.phase === 'established' ? 'UNKNOWN_TASK' : 'HANDSHAKE_REQUIRED';
    expect(got.msg.type === 'error' && got.msg.payload.code === want, `task.status in phase ${m.phase} got ${describeMessage(got.msg)}, not ${want}`);
  }
  toString = () => 'task.status';
}

class UnknownTypeCmd implements fc.AsyncCommand<HsModel, HsReal> {
  check = (m: Readonly<HsModel>) => m.phase !== 'closed';
  async run(_m: HsModel, r: HsReal) {
    const sent = await r.peer.post('task.whatever', {}, {}, { deliberate: 'an unknown type' });
    const got = await reply(r.peer, sent);
    expect(got.msg.type === 'error' && got.msg.payload.code === 'UNKNOWN_MESSAGE_TYPE', `an unknown type got ${describeMessage(got.msg)}`);
  }
  toString = () => 'unknown type';
}

const handshakeCommands = [
  fc.constant(new PingCmd()),
  fc.tuple(fc.integer({ min: 0, max: 120_000 }), fc.integer({ min: 1024, max: 4_194_304 }), fc.boolean()).map(([h, b, s]) => new InitCmd(h, b, s)),
  fc.boolean().map((ok) => new ReadyCmd(ok)),
  fc.constant(new EarlyRequestCmd()),
  fc.constant(new UnknownTypeCmd()),
];

/** core.property.handshake: random handshake sequences on fresh connections. */
export const handshakeProperty = defineCase({
  id: 'core.property.handshake',
  title: 'Random sequences of handshake messages get exactly the replies the handshake rules give (property-based)',
  level: 'MUST',
  profile: 'core',
  spec: 'handshake#before-go',
  requirements: ['TAP-HS-014', 'TAP-HS-015', 'TAP-HS-009', 'TAP-HS-011', 'TAP-MSG-002'],
  budgetMs: 60_000,
  run: async (ctx) => {
    const history: Received[][] = [];
    const prop = fc.asyncProperty(fc.commands(handshakeCommands, { maxCommands: 8 }), async (cmds) => {
      const c = await ctx.connect();
      if (!c.ok) throw new Broken(c.outcome.detail);
      const peer = c.value;
      const mark = peer.mark();
      try {
        await fc.asyncModelRun(() => ({ model: { phase: 'fresh' as Phase }, real: { ctx, peer } }), cmds);
      } finally {
        history.push(peer.since(mark));
        const conn = ctx.connectionOf(peer);
        void peer.close().catch(() => {});
        setTimeout(() => conn?.kill?.('SIGKILL'), 2000).unref();
      }
    });
    return runProperty(ctx, 'core.property.handshake', prop, ctx.scaled(45_000));
  },
});

// ---------------------------------------------------------------------------------------------
// Task lifecycle model: submit, duplicate, retry under a key, cancel, status, resume, and pairs of
// submissions in an order the scheduler picks.

interface TaskModel {
  kind: 'counter' | 'sleep';
  request: Wire;
  reply?: Received;
  key?: string;
  counterKey?: string;
  state: 'running' | 'completed' | 'cancelled';
}
interface LifeModel {
  tasks: TaskModel[];
}
interface LifeReal {
  ctx: CaseContext;
  peer: Peer;
  run: number;
  /** Sleep tasks still running, across runs (a failed run leaves some behind). */
  leftovers: Set<string>;
  scheduler: fc.Scheduler;
  keys: Set<string>;
  taskIds: Set<string>;
  n: { value: number };
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
  expect(got.msg.type === 'task.accepted', `a new counter task got ${describeMessage(got.msg)}`);
  const res = await collectUntilResult(peer, taskId);
  expect(res.ok, `the counter task ${taskId} got no result`);
  const out = res.ok ? res.value.result.msg.payload : undefined;
  expect(out?.status === 'completed' && out.output?.count === 1, `a fresh counter key ended ${res.ok ? describeMessage(res.value.result.msg) : 'without result'}, not count 1`);
  m.tasks.push({ kind: 'counter', request, reply: got, key: keyed ? counterKey : undefined, counterKey, state: 'completed' });
}

class SubmitCounter implements fc.AsyncCommand<LifeModel, LifeReal> {
  constructor(readonly keyed: boolean) {}
  check = () => true;
  run = (m: LifeModel, r: LifeReal) => submitCounter(m, r, this.keyed);
  toString = () => `submit counter${this.keyed ? ' (keyed)' : ''}`;
}

class SubmitSleep implements fc.AsyncCommand<LifeModel, LifeReal> {
  check = (m: Readonly<LifeModel>) => m.tasks.filter((t) => t.state === 'running').length < 3;
  async run(m: LifeModel, r: LifeReal) {
    const taskId = fresh(r, 's');
    const request = r.peer.envelope('task.request', { capability: 'tap.test.sleep', input: { ms: 120_000 } }, { task_id: taskId });
    await r.peer.send(request);
    r.taskIds.add(taskId);
    r.leftovers.add(taskId);
    const got = await reply(r.peer, request);
    expect(got.msg.type === 'task.accepted', `a sleep task got ${describeMessage(got.msg)}`);
    m.tasks.push({ kind: 'sleep', request, reply: got, state: 'running' });
  }
  toString = () => 'submit sleep';
}

class Duplicate implements fc.AsyncCommand<LifeModel, LifeReal> {
  constructor(readonly i: number) {}
  check = (m: Readonly<LifeModel>) => m.tasks.length > 0;
  async run(m: LifeModel, r: LifeReal) {
    const t = m.tasks[this.i % m.tasks.length]!;
    const mark = r.peer.mark();
    await r.peer.send(t.request);
    const again = await r.peer.waitFor((x) => x.index >= mark && x.msg.reply_to === t.request.message_id, 'the re-sent reply');
    expect(again.ok, `a duplicate task.request got no reply: ${again.ok ? '' : again.outcome.detail}`);
    expect(again.ok && again.value.text === t.reply!.text, 'a duplicate task.request was not answered with the original reply, byte for byte');
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
    expect(got.msg.type === 'task.snapshot' && got.msg.task_id === t.request.task_id, `a retry under key ${t.key} got ${describeMessage(got.msg)}, not the snapshot of ${t.request.task_id}`);
  }
  toString = () => `retry key #${this.i}`;
}

class Cancel implements fc.AsyncCommand<LifeModel, LifeReal> {
  constructor(readonly i: number) {}
  check = (m: Readonly<LifeModel>) => m.tasks.length > 0;
  async run(m: LifeModel, r: LifeReal) {
    const t = m.tasks[this.i % m.tasks.length]!;
    const sent = await r.peer.post('task.cancel', {}, { task_id: t.request.task_id });
    const got = await reply(r.peer, sent);
    if (t.state === 'completed') {
      expect(got.msg.type === 'error' && got.msg.payload.code === 'TASK_TERMINAL', `a cancel of a completed task got ${describeMessage(got.msg)}, not TASK_TERMINAL`);
      return;
    }
    expect(got.msg.type === 'task.snapshot', `a cancel of a ${t.state} task got ${describeMessage(got.msg)}, not a snapshot`);
    if (t.state === 'running') {
      const res = await collectUntilResult(r.peer, t.request.task_id!);
      expect(res.ok && res.value.result.msg.payload.status === 'cancelled', `a cancelled sleep ended ${res.ok ? describeMessage(res.value.result.msg) : 'without result'}`);
      t.state = 'cancelled';
      r.leftovers.delete(t.request.task_id!);
    }
  }
  toString = () => `cancel #${this.i}`;
}

class Status implements fc.AsyncCommand<LifeModel, LifeReal> {
  constructor(readonly i: number) {}
  check = (m: Readonly<LifeModel>) => m.tasks.length > 0;
  async run(m: LifeModel, r: LifeReal) {
    const t = m.tasks[this.i % m.tasks.length]!;
    const sent = await r.peer.post('task.status', {}, { task_id: t.request.task_id });
    const got = await reply(r.peer, sent);
    expect(got.msg.type === 'task.snapshot', `task.status got ${describeMessage(got.msg)}`);
    const p = got.msg.payload;
    const terminal = t.state !== 'running';
    expect(terminal === (p.result !== undefined), `the snapshot of a ${t.state} task ${terminal ? 'lacks' : 'carries'} a result`);
    if (terminal) expect(p.state === t.state, `the snapshot says ${p.state}, the task ended ${t.state}`);
    else expect(p.state === 'accepted' || p.state === 'running', `a running sleep shows state ${p.state}`);
    expect(p.last_sequence === r.peer.state.lastSequence(t.request.task_id!), `last_sequence ${p.last_sequence} is not the last sequence sent (${r.peer.state.lastSequence(t.request.task_id!)})`);
  }
  toString = () => `status #${this.i}`;
}

class Resume implements fc.AsyncCommand<LifeModel, LifeReal> {
  constructor(readonly i: number, readonly back: number) {}
  check = (m: Readonly<LifeModel>) => m.tasks.length > 0;
  async run(m: LifeModel, r: LifeReal) {
    const t = m.tasks[this.i % m.tasks.length]!;
    const id = t.request.task_id!;
    const last = r.peer.state.lastSequence(id);
    const from = Math.max(0, last - this.back);
    const mark = r.peer.mark();
    const sent = await r.peer.post('task.resume', { last_sequence: from }, { task_id: id });
    const got = await reply(r.peer, sent);
    expect(got.msg.type === 'task.snapshot', `task.resume got ${describeMessage(got.msg)}`);
    if (last > from) {
      const done = await r.peer.waitFor((x) => x.index >= mark && x.msg.task_id === id && x.msg.sequence === last, `the replay up to ${last}`);
      expect(done.ok, `task.resume from ${from} did not replay up to ${last}`);
    }
    const originals = new Map(streamOf(r.peer, id).map((x) => [x.msg.sequence, x.text]));
    for (const x of r.peer.since(mark)) {
      if (x.msg.task_id !== id || x.msg.sequence === undefined || x.msg.sequence > last) continue;
      expect(x.text === originals.get(x.msg.sequence), `the replay of ${id} sequence ${x.msg.sequence} differs from the original`);
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

const lifecycleCommands = [
  fc.boolean().map((k) => new SubmitCounter(k)),
  fc.constant(new SubmitSleep()),
  fc.nat(20).map((i) => new Duplicate(i)),
  fc.nat(20).map((i) => new RetryKey(i)),
  fc.nat(20).map((i) => new Cancel(i)),
  fc.nat(20).map((i) => new Status(i)),
  fc.tuple(fc.nat(20), fc.nat(4)).map(([i, b]) => new Resume(i, b)),
  fc.constant(new Pair()),
];

/** After a run: every sleep cancelled, then the history, exactly-once and no-lost-task checks. */
async function finishRun(m: LifeModel, r: LifeReal, mark: number): Promise<void> {
  for (const t of m.tasks.filter((x) => x.state === 'running')) {
    const sent = await r.peer.post('task.cancel', {}, { task_id: t.request.task_id });
    await reply(r.peer, sent);
    const res = await collectUntilResult(r.peer, t.request.task_id!);
    expect(res.ok, `the cancelled task ${t.request.task_id} got no result`);
    t.state = 'cancelled';
    r.leftovers.delete(t.request.task_id!);
  }
  for (const key of r.keys) {
    const taskId = fresh(r, 'probe');
    const sent = await r.peer.post('task.request', { capability: 'tap.test.counter', input: { key } }, { task_id: taskId });
    await reply(r.peer, sent);
    const res = await collectUntilResult(r.peer, taskId);
    const count = res.ok ? res.value.result.msg.payload.output?.count : undefined;
    expect(count === 2, `counter ${key} had run ${typeof count === 'number' ? count - 1 : '?'} times for one request (one effect per idempotency key)`);
  }
  const msgs = r.peer.since(mark).filter((x) => x.msg.task_id === undefined || r.taskIds.has(x.msg.task_id)).map((x) => x.msg);
  const violations = checkHistory(msgs, undefined, { complete: true });
  expect(violations.length === 0, `the task history breaks a rule (${violations[0]?.rule}): ${violations[0]?.message}`);
}

/** tasks.property.lifecycle: random task operations on one session, checked as a whole. */
export const lifecycleProperty = defineCase({
  id: 'tasks.property.lifecycle',
  title: 'Random submits, duplicates, keyed retries, cancels, status and resume requests keep every task rule (property-based)',
  level: 'MUST',
  profile: 'tasks',
  spec: 'tasks#states',
  requirements: ['TAP-TASK-005', 'TAP-TASK-007', 'TAP-EVT-004', 'TAP-IDEM-001', 'TAP-IDEM-005', 'TAP-CAN-007', 'TAP-RES-002'],
  needs: { capabilities: ['tap.test.counter', 'tap.test.sleep'] },
  budgetMs: 70_000,
  run: async (ctx) => {
    const s = await ctx.session({ params: { max_concurrent_tasks: 16 } });
    if (!s.ok) return s.outcome;
    const peer = s.value;
    let run = 0;
    const leftovers = new Set<string>();
    const prop = fc.asyncProperty(fc.scheduler(), fc.commands(lifecycleCommands, { maxCommands: 10 }), async (scheduler, cmds) => {
      // Tasks a failed run left running would count against the session's task limit.
      for (const id of [...leftovers]) {
        await peer.post('task.cancel', {}, { task_id: id });
        leftovers.delete(id);
      }
      const real: LifeReal = { ctx, peer, run: ++run, leftovers, scheduler, keys: new Set(), taskIds: new Set(), n: { value: 0 } };
      const model: LifeModel = { tasks: [] };
      const mark = peer.mark();
      await fc.asyncModelRun(() => ({ model, real }), cmds);
      await finishRun(model, real, mark);
    });
    return runProperty(ctx, 'tasks.property.lifecycle', prop, ctx.scaled(55_000));
  },
});

export const propertyCases: Case[] = [handshakeProperty, lifecycleProperty];

export { handshake };
