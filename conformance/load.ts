/**
 * The suite's own load on the agent (spec: limits#concurrency): every task the harness asked for
 * and has not seen end, in the cases running and left running by the cases that finished; the
 * gate that starts a case only when the tasks it may hold fit the agent's declared limits beside
 * them; and whether a BUSY could have been the suite's own doing, which makes a failure the
 * suite's (ERROR), never the agent's (spec: conformance#verdicts, TAP-CONF-002).
 */
import { isTerminal } from './schemas.ts';
import type { SessionState, Wire } from './session-state.ts';
import { timingWindow } from './verdict.ts';

/** The task limits an agent card declares (spec: handshake#agent-card, limits#concurrency). */
export interface TaskLimits {
  /** limits.max_concurrent_tasks: non-terminal tasks across all sessions. */
  total?: number;
  /** limits.max_tasks_per_principal, when declared. */
  perPrincipal?: number;
  /** The lower of limits.max_tasks_per_session and the max_concurrent_tasks of a session's params. */
  perSession?: number;
}

/**
 * The task limits of a card, and of the params of a session it acked (the probe's); a limit that
 * is not a positive whole number is left out.
 */
// biome-ignore lint/suspicious/noExplicitAny: a card and params of any shape, read by field
export function limitsOf(card: Record<string, any> | undefined, params?: Record<string, any>): TaskLimits {
  const whole = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined);
  const out: TaskLimits = {};
  const total = whole(card?.limits?.max_concurrent_tasks);
  const perPrincipal = whole(card?.limits?.max_tasks_per_principal);
  const perSession = [whole(card?.limits?.max_tasks_per_session), whole(params?.max_concurrent_tasks)].filter((n) => n !== undefined);
  if (total !== undefined) out.total = total;
  if (perPrincipal !== undefined) out.perPrincipal = perPrincipal;
  if (perSession.length) out.perSession = Math.min(...perSession);
  return out;
}

/** The most tasks the suite may hold at the agent at once: every session of the run counted as one principal. */
export function capacityOf(limits: TaskLimits): number {
  return Math.min(limits.total ?? Number.POSITIVE_INFINITY, limits.perPrincipal ?? Number.POSITIVE_INFINITY);
}

/** The resume window an agent states when its ack does not (spec: resume#orphaned-sessions). */
const DEFAULT_RESUME_WINDOW_MS = 300_000;

/** One task the harness asked for and has not seen end. */
interface Held {
  owner: string;
  session: SessionState;
  principal: string;
  taskId: string;
  /** The message_id of the request that created the task, when the harness sent one. */
  requestId?: string;
  since: number;
  /** How long the task runs by its own definition, when the harness knows (the tap.test.* capabilities). */
  runsMs?: number;
  /** Once its case has ended: when the task has ended at the latest, as far as the harness can tell. */
  until?: number;
}

/** The harness's load at the moment it sent a request. */
interface Snapshot {
  total: number;
  own: number;
  principal: number;
  principalOwn: number;
  session: number;
}

/**
 * How long a task of a conformance capability runs by its definition (spec: conformance#input-forms),
 * or undefined: echo, counter and fail end at once, sleep after its ms, stream after its events.
 */
function runsMsOf(payload: Wire['payload']): number | undefined {
  const input = payload?.input;
  const limit = typeof payload?.timeout_ms === 'number' ? payload.timeout_ms : undefined;
  let own: number | undefined;
  switch (payload?.capability) {
    case 'tap.test.echo':
    case 'tap.test.counter':
    case 'tap.test.fail':
      own = 0;
      break;
    case 'tap.test.sleep':
      own = typeof input?.ms === 'number' ? input.ms : undefined;
      break;
    case 'tap.test.stream':
      own = typeof input?.count === 'number' ? input.count * (typeof input.interval_ms === 'number' ? input.interval_ms : 0) : undefined;
      break;
  }
  if (own === undefined) return limit;
  return limit === undefined ? own : Math.min(own, limit);
}

/**
 * Every task the harness holds at the agent, by the case run (`owner`) that asked for it. A task
 * counts from its request until its result, a terminal snapshot, a refusal, or the end of its
 * session (a farewell or a fatal error); once its case has ended, until it has ended by its own
 * definition or its orphaned session's resume window has passed, whichever comes first.
 */
export class TaskLedger {
  private readonly held = new Map<string, Held>();
  /** Tasks seen to end, so that a late copy of their stream does not count them again. */
  private readonly ended = new Set<string>();
  private readonly snapshots = new Map<string, Snapshot>();
  private readonly ownPrincipals = new WeakMap<SessionState, string>();
  private readonly endedSessions = new WeakSet<SessionState>();
  /** The grace period of each shutdown.request the harness sent, by message id. */
  private readonly graces = new Map<string, number>();
  /** Sessions whose shutdown the agent approved: it ends their tasks by this time (spec: shutdown#shutdown-sequence). */
  private readonly shutdownBy = new WeakMap<SessionState, number>();
  private sessions = 0;
  /** The most tasks each case run held at once. */
  private readonly peaks = new Map<string, number>();
  /** Called whenever tasks stop counting. */
  onRelease?: () => void;

  constructor(
    readonly limits: TaskLimits,
    private readonly timeScale = 1,
    private readonly now: () => number = Date.now,
  ) {}

  /** The principal of a session: its key or credentials, or a principal of its own (spec: authorization#principals). */
  principalOf(state: SessionState): string {
    if (state.principal !== undefined) return state.principal;
    let p = this.ownPrincipals.get(state);
    if (p === undefined) this.ownPrincipals.set(state, (p = `session ${++this.sessions}`));
    return p;
  }

  /** Tasks held now, in all. */
  count(): number {
    this.prune();
    return this.held.size;
  }

  /** Tasks held now by one case run. */
  countOf(owner: string): number {
    return this.countWhere((h) => h.owner === owner);
  }

  /** The most tasks any run of each case held at once, by case id (a run's owner is "<case id>#<n>"). */
  peakByCase(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [owner, n] of this.peaks) {
      const id = owner.replace(/#\d+$/, '');
      out.set(id, Math.max(out.get(id) ?? 0, n));
    }
    return out;
  }

  /** The earliest time a task of a finished case stops counting, if any does. */
  nextRelease(): number | undefined {
    let next: number | undefined;
    for (const h of this.held.values()) if (h.until !== undefined && (next === undefined || h.until < next)) next = h.until;
    return next;
  }

  /** Records a message the harness sent. */
  sent(owner: string, state: SessionState, msg: Wire, deliberate: boolean): void {
    if (msg.type === 'session.farewell' || (msg.type === 'error' && msg.payload?.fatal === true)) this.endSession(state);
    if (msg.type === 'shutdown.request' && typeof msg.payload?.grace_ms === 'number') this.graces.set(msg.message_id, msg.payload.grace_ms);
    if (msg.type !== 'task.request' || deliberate || typeof msg.task_id !== 'string') return;
    const principal = this.principalOf(state);
    const k = key(principal, msg.task_id);
    this.snapshots.set(msg.message_id, {
      total: this.count(),
      own: this.countOf(owner),
      principal: this.countWhere((h) => h.principal === principal),
      principalOwn: this.countWhere((h) => h.principal === principal && h.owner === owner),
      session: this.countWhere((h) => h.session === state),
    });
    // A re-sent request (a retry, a duplicate) asks for the task it asked for before.
    if (this.held.has(k) || this.ended.has(k)) return;
    this.held.set(k, {
      owner,
      session: state,
      principal,
      taskId: msg.task_id,
      requestId: msg.message_id,
      since: this.now(),
      runsMs: runsMsOf(msg.payload),
    });
    this.peaked(owner);
  }

  /**
   * Records a message the agent sent. Returns, for a BUSY that the suite's own load could have
   * caused, why: the tasks the harness held then reached a limit the agent declared.
   * `deliberateFill` is for a case that fills the limits on purpose: only the load of other cases counts then.
   */
  received(owner: string, state: SessionState, msg: Wire, deliberateFill = false): string | undefined {
    const principal = this.principalOf(state);
    const task = typeof msg.task_id === 'string' ? key(principal, msg.task_id) : undefined;
    const replyTo = typeof msg.reply_to === 'string' ? msg.reply_to : undefined;
    if (msg.type === 'session.farewell' || (msg.type === 'error' && msg.payload?.fatal === true)) this.endSession(state);
    const grace = replyTo === undefined ? undefined : this.graces.get(replyTo);
    if (msg.type === 'shutdown.response' && msg.payload?.approve === true && grace !== undefined)
      this.shutdownBy.set(state, this.now() + timingWindow(grace, this.timeScale).punctualMs);
    if (msg.type === 'task.result' && task) this.end(task);
    else if (msg.type === 'task.snapshot' && typeof msg.payload?.state === 'string') {
      if (task && isTerminal(msg.payload.state)) this.end(task);
      // A duplicate answered with an earlier task's snapshot created no task of its own.
      if (replyTo) this.refused(replyTo, task);
    } else if (msg.type === 'error' && replyTo) {
      this.refused(replyTo);
      const busy = msg.payload?.code === 'BUSY' ? this.busyByLoad(replyTo, state, deliberateFill) : undefined;
      this.snapshots.delete(replyTo);
      return busy;
    } else if (task && !this.held.has(task) && !this.ended.has(task) && STREAM.has(msg.type) && !this.endedSessions.has(state)) {
      // A task the harness did not count at its request (one sent on purpose invalid) runs after all.
      this.held.set(task, { owner, session: state, principal, taskId: msg.task_id!, since: this.now() });
      this.peaked(owner);
    }
    return undefined;
  }

  /**
   * Ends a case run: its tasks that ended with their session stop counting; the others count
   * until they end by their own definition or their session's resume window has passed.
   */
  release(owner: string): void {
    const now = this.now();
    for (const [k, h] of this.held) {
      if (h.owner !== owner) continue;
      // The session is orphaned from now on: the agent ends its tasks once the window has passed (spec: resume#orphaned-sessions).
      const window = h.session.resumeWindowMs ?? DEFAULT_RESUME_WINDOW_MS;
      const byWindow = now + timingWindow(window, this.timeScale).punctualMs;
      const byTask = h.runsMs === undefined ? Number.POSITIVE_INFINITY : h.since + timingWindow(h.runsMs, this.timeScale).punctualMs;
      h.until = Math.min(byWindow, byTask, this.shutdownBy.get(h.session) ?? Number.POSITIVE_INFINITY);
      if (h.until <= now) this.held.delete(k);
    }
    this.changed();
  }

  /** Forgets a case run's tasks at once: its agent process is gone (stdio). */
  forget(owner: string): void {
    for (const [k, h] of this.held) if (h.owner === owner) this.held.delete(k);
    this.changed();
  }

  private busyByLoad(requestId: string, state: SessionState, deliberateFill: boolean): string | undefined {
    const s = this.snapshots.get(requestId);
    if (!s) return undefined;
    const { total, perPrincipal } = this.limits;
    const heldAll = deliberateFill ? s.total - s.own : s.total;
    const heldPrincipal = deliberateFill ? s.principal - s.principalOwn : s.principal;
    const own = state.params?.max_concurrent_tasks;
    const proposed = state.proposedConcurrency;
    let limit: string | undefined;
    if (total !== undefined && heldAll >= total) limit = `${tasks(heldAll)} at the agent, whose limits.max_concurrent_tasks is ${total}`;
    else if (perPrincipal !== undefined && heldPrincipal >= perPrincipal)
      limit = `${tasks(heldPrincipal)} under one principal, and the agent's limits.max_tasks_per_principal is ${perPrincipal}`;
    // A session limit the agent set below the harness's proposal is the agent's own; one the case asked for is what it tests.
    else if (!deliberateFill && typeof own === 'number' && proposed !== undefined && own < proposed && s.session >= own)
      limit = `${tasks(s.session)} in a session whose max_concurrent_tasks the agent set to ${own}`;
    if (!limit) return undefined;
    return `the agent answered BUSY (correctly) while the suite held ${limit}: the suite's own load may have caused it, not the agent`;
  }

  /** A request answered with an error or another task's snapshot created no task. */
  private refused(requestId: string, other?: string): void {
    for (const [k, h] of this.held) {
      if (h.requestId !== requestId || k === other) continue;
      this.held.delete(k);
      this.changed();
      return;
    }
  }

  private end(k: string): void {
    this.ended.add(k);
    if (this.held.delete(k)) this.changed();
  }

  /** The session ended (a farewell, a fatal error): the agent ends its tasks at once (spec: errors#fatal-errors, shutdown#requester-farewell). */
  private endSession(state: SessionState): void {
    this.endedSessions.add(state);
    let any = false;
    for (const [k, h] of this.held) {
      if (h.session !== state) continue;
      this.held.delete(k);
      any = true;
    }
    if (any) this.changed();
  }

  private peaked(owner: string): void {
    this.peaks.set(owner, Math.max(this.peaks.get(owner) ?? 0, this.countOf(owner)));
  }

  private countWhere(pred: (h: Held) => boolean): number {
    this.prune();
    let n = 0;
    for (const h of this.held.values()) if (pred(h)) n++;
    return n;
  }

  private prune(): void {
    const now = this.now();
    for (const [k, h] of this.held) if (h.until !== undefined && h.until <= now) this.held.delete(k);
  }

  private changed(): void {
    this.onRelease?.();
  }
}

/** "1 task", "8 tasks". */
function tasks(n: number): string {
  return `${n} task${n === 1 ? '' : 's'}`;
}

const STREAM = new Set(['task.accepted', 'task.event', 'plan.submit', 'task.handoff']);

function key(principal: string, taskId: string): string {
  return `${principal}\u0000${taskId}`;
}

/**
 * Starts case runs only when the tasks each may hold fit the agent's capacity beside the tasks
 * the suite already holds: those of the cases running (at least what each may hold) and those
 * left running by cases that ended. Cases that hold no task never wait; the others enter in turn.
 */
export class TaskGate {
  /** Case runs that may hold tasks, with how many. */
  private readonly running = new Map<string, number>();
  private readonly queue: { owner: string; need: number; admit: () => void }[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** Since when the first case in line has waited with no other case running. */
  private idleSince: number | undefined;

  /**
   * `maxWaitMs`: when no case runs and tasks left by finished cases still block the next one, it
   * waits for them at most this long; then it runs, and a BUSY it meets is the suite's (ERROR).
   */
  constructor(
    private readonly ledger: TaskLedger,
    readonly capacity: number,
    private readonly maxWaitMs: number,
    private readonly now: () => number = Date.now,
  ) {
    ledger.onRelease = () => this.pump();
  }

  /** Resolves when the case run may start: at once for one that holds no task. */
  enter(owner: string, need: number): Promise<void> {
    if (need === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.queue.push({ owner, need, admit: resolve });
      this.pump();
    });
  }

  /** The case run ended; the tasks it left running stay counted by the ledger. */
  leave(owner: string): void {
    if (this.running.delete(owner)) this.pump();
  }

  /** Tasks held or reserved: the ledger's, plus what each running case may still start. */
  private occupied(): number {
    let reserved = 0;
    for (const [owner, need] of this.running) reserved += Math.max(0, need - this.ledger.countOf(owner));
    return this.ledger.count() + reserved;
  }

  private pump(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.queue.length > 0) {
      const head = this.queue[0]!;
      if (this.occupied() + head.need > this.capacity && !this.overrun()) break;
      this.queue.shift();
      this.idleSince = undefined;
      this.running.set(head.owner, head.need);
      head.admit();
    }
    if (this.queue.length === 0) return;
    // Look again when a task left by a finished case stops counting, and, when nothing runs, once
    // the line has waited long enough.
    let next = this.ledger.nextRelease() ?? Number.POSITIVE_INFINITY;
    if (this.running.size === 0) next = Math.min(next, (this.idleSince ?? this.now()) + this.maxWaitMs);
    if (Number.isFinite(next)) this.timer = setTimeout(() => this.pump(), Math.max(0, next - this.now()) + 5);
  }

  /** True when no case runs and the tasks left by finished cases have kept the line waiting long enough. */
  private overrun(): boolean {
    if (this.running.size > 0) return false;
    const now = this.now();
    this.idleSince ??= now;
    const next = this.ledger.nextRelease();
    return next === undefined || now - this.idleSince >= this.maxWaitMs || next - now > this.maxWaitMs - (now - this.idleSince);
  }
}
