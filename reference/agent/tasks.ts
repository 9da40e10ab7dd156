/**
 * Tasks and idempotency records as the agent keeps them: tasks keyed by (principal, task_id),
 * idempotency records by (principal, capability, key), both bounded (spec: tasks#identity,
 * idempotency).
 */
import type { PayloadOf, TaskState } from '../../schemas/src/index.ts';
import { extended } from '../core/extended.ts';
import { PairMap } from '../core/pair-map.ts';
import { EndedQueue } from './ended-queue.ts';
import { isTerminal } from '../core/states.ts';
import type { ErrorPayload } from '../core/errors.ts';
import type { TimerHandle } from '../core/platform.ts';
import { pendingInput, type Authorization, type InputRecord, type PlanRecord, type TaskAbort } from './model.ts';

export type { Authorization } from './model.ts';
/** A task's one result (spec: tasks#result). */
export interface TaskOutcome {
  status: 'completed' | 'failed' | 'cancelled' | 'timed_out';
  output?: unknown;
  error?: ErrorPayload;
}

/** What the handler recorded to resume from, and what a hand-off reports. */
export interface Checkpoint {
  state: Record<string, unknown>;
  completed_steps: string[];
  remaining_steps: string[];
  resume_hint: string;
  /** Effects that had ended when the checkpoint was taken. */
  effects: number;
}

/** The trace members of a request's metadata (spec: mesh#trace). */
export interface TaskTrace {
  trace_id: string;
  span_id?: string;
}

/** The trace of a request's metadata, when it names one. */
export function traceOf(metadata: { trace_id?: string; span_id?: string } | undefined): TaskTrace | undefined {
  if (typeof metadata?.trace_id !== 'string') return undefined;
  return typeof metadata.span_id === 'string'
    ? { trace_id: metadata.trace_id, span_id: metadata.span_id }
    : { trace_id: metadata.trace_id };
}

/** The metadata of a message of the task's stream: its trace and what else it carries, or undefined for none. */
export function streamMetadata(task: Pick<Task, 'trace' | 'carried'>): TaskTrace | Record<string, unknown> | undefined {
  return task.carried ? extended(task.trace, task.carried) : task.trace;
}

/** One task of one principal. */
export interface Task {
  principal: string;
  /** Whose share of the caps the task draws on: unset, its principal; in an anonymous session, its origin (spec: limits#sources). */
  share?: string;
  taskId: string;
  /** The session whose connection carries the task's stream. */
  sessionId: string;
  capability: string;
  input: unknown;
  authorization?: Authorization;
  fingerprint: string;
  idempotencyKey?: string;
  previousTaskId?: string;
  attempt: number;
  /** The request's trace, carried unchanged into every message of the task (spec: mesh#trace). */
  trace?: TaskTrace;
  /** 1.1: what every message of the stream carries in metadata, trace context and extension members (spec: envelope#trace-context). */
  carried?: Record<string, unknown>;
  /** 1.1: the agents that delegated the task, oldest first (spec: mesh#delegation). */
  delegation?: string[];
  /** 1.1: a quiet task, whose stream holds its outcome and what it needs, its acceptance sequence 1 unsent (spec: tasks#quiet-tasks). */
  quiet?: true;
  state: TaskState;
  createdAt: number;
  updatedAt: number;
  /** The effective deadline in ms since the epoch (spec: tasks#deadlines). */
  deadline: number;
  /** The last sequence already sent (spec: tasks#sequence). */
  lastSequence: number;
  /** Retained serialized messages; `retained[0]` has sequence `firstRetained`. */
  retained: string[];
  firstRetained: number;
  result?: TaskOutcome;
  /** A task.cancel was taken for it (spec: tasks#cancellation). */
  cancelRequested: boolean;
  plans: PlanRecord[];
  /** The input requests asked so far (for their ids), and the pending one while the task is input_required (spec: tasks#input-required). */
  inputs?: { asked: number; pending?: InputRecord };
  checkpoint?: Checkpoint;
  /** Side effects begun and ended; open > 0 means one is under way (spec: durability#indeterminate). */
  effectsBegun: number;
  effectsEnded: number;
  abort: TaskAbort;
  /** The timer that ends a cancelled task whose handler outlives the cancel grace. */
  releaseTimer?: TimerHandle;
  /** Where the task's deadline sits in the runner's deadline heap while it is armed (deadlines.ts). */
  deadlineSlot?: number;
  /** Set by a restart: the checkpoint the handler resumes from. */
  restored?: Checkpoint | { state: Record<string, unknown> };
  /** Kept by the task table: its retained messages' UTF-16 code units while the task is in it, undefined once it is not. */
  tableBytes?: number;
  /** Kept by the task table: when the task ended there, in ms since the epoch (its retention starts then). */
  tableEndedAt?: number;
}

/** The share a task draws on: its session's source, else its principal (spec: limits#sources). */
export function shareOf(task: Task): string {
  return task.share ?? task.principal;
}

/** The current plan of a task, if any. */
export function currentPlan(task: Task): PlanRecord | undefined {
  return task.plans[task.plans.length - 1];
}

/** The task as it stands now: the payload of task.snapshot (spec: tasks#snapshot). */
export function snapshotOf(task: Task, iso: (ms: number) => string): PayloadOf<'task.snapshot'> {
  const snap: PayloadOf<'task.snapshot'> = {
    state: task.state,
    capability: task.capability,
    last_sequence: Math.max(1, task.lastSequence),
    created_at: iso(task.createdAt),
    updated_at: iso(task.updatedAt),
  };
  if (task.result) snap.result = task.result;
  const plan = currentPlan(task);
  if (plan) snap.plan = { plan_id: plan.plan.plan_id, state: plan.state };
  if (task.previousTaskId !== undefined) snap.previous_task_id = task.previousTaskId;
  const pending = task.state === 'input_required' ? task.inputs?.pending : undefined;
  if (pending) snap.input_request = pendingInput(pending);
  return snap;
}

/** The bounds of a task table (spec: limits#table-limits). */
export interface TaskTableLimits {
  /** Tasks, terminal or not, kept per principal. */
  maxPerPrincipal: number;
  /** Tasks kept across all principals. */
  maxTotal: number;
  /** Bytes of retained stream messages kept per principal. */
  maxBytesPerPrincipal: number;
  /** How long a terminal task is kept at least: the resume window (spec: resume#retention). */
  retentionMs: number;
}

/**
 * The tasks of every principal, with counts for the BUSY caps. A terminal task, with its
 * stream and idempotency record, is kept at least `retentionMs` after it ended; past that it is
 * forgotten only to make room, and only when it is needed: one principal's traffic never
 * forgets another's task within its retention, and when no room can be made the new task is
 * refused BUSY instead (spec: idempotency#keeping-records, limits#table-limits). Unfinished
 * tasks are also counted per share: a principal, or the anonymous sessions of one origin
 * together (spec: limits#sources).
 */
export class TaskTable {
  private readonly byKey = new PairMap<Task>();
  /**
   * The tasks not yet terminal, so that the BUSY checks of every request cost the number of
   * running tasks, not the number retained. A task that ended without `ended` is dropped here
   * the next time it is met.
   */
  private readonly active = new Set<Task>();
  private readonly endedAll = new EndedQueue<Task>();
  private readonly endedBy = new Map<string, EndedQueue<Task>>();
  private readonly counts = new Map<string, { tasks: number; bytes: number }>();
  private readonly limits: TaskTableLimits;

  constructor(
    limits: Partial<TaskTableLimits> = {},
    private readonly now: () => number = Date.now,
    private readonly onEvict: (task: Task) => void = () => {},
  ) {
    this.limits = {
      maxPerPrincipal: limits.maxPerPrincipal ?? 4096,
      maxTotal: limits.maxTotal ?? 16_384,
      maxBytesPerPrincipal: limits.maxBytesPerPrincipal ?? 256 * 1024 * 1024,
      retentionMs: limits.retentionMs ?? 300_000,
    };
  }

  /** The task `taskId` of `principal`; never one of another principal (spec: authorization#isolation). */
  get(principal: string, taskId: string): Task | undefined {
    return this.byKey.get(principal, taskId);
  }

  /** Keeps `task`, replacing a task of the same id; `absent`: the caller has just found none, so none is looked for. */
  add(task: Task, absent = false): void {
    const old = absent ? undefined : this.byKey.get(task.principal, task.taskId);
    if (old) this.forget(old);
    this.byKey.set(task.principal, task.taskId, task);
    const count = this.countOf(task.principal);
    count.tasks++;
    const bytes = task.retained.reduce((n, t) => n + t.length, 0);
    task.tableBytes = bytes;
    count.bytes += bytes;
    if (isTerminal(task.state)) this.ended(task);
    else this.active.add(task);
  }

  /** Records that `task` became terminal: its retention starts now. Its input is let go: its fingerprint stands for it. */
  ended(task: Task): void {
    this.active.delete(task);
    task.input = undefined;
    if (task.tableEndedAt !== undefined || task.tableBytes === undefined) return;
    task.tableEndedAt = this.now();
    this.endedAll.push(task);
    let queue = this.endedBy.get(task.principal);
    if (!queue) this.endedBy.set(task.principal, (queue = new EndedQueue<Task>()));
    queue.push(task);
    const live = (t: Task) => t.tableBytes !== undefined;
    this.endedAll.compact(live, this.byKey.size);
    queue.compact(live, this.countOf(task.principal).tasks);
  }

  /** Counts the change of a task's retained messages, in UTF-16 code units. */
  retainedChanged(task: Task, delta: number): void {
    const held = task.tableBytes;
    if (held === undefined) return;
    task.tableBytes = held + delta;
    this.countOf(task.principal).bytes += delta;
  }

  /**
   * Makes room for a task of `principal`, forgetting terminal tasks past retention; null, or the cap
   * left full with the ms until its oldest terminal task leaves retention (none if all still run).
   */
  admit(principal: string): { scope: 'principal' | 'agent'; limit: number; what: string; freesInMs?: number } | null {
    const { maxPerPrincipal, maxTotal, maxBytesPerPrincipal } = this.limits;
    const count = this.countOf(principal);
    const queue = this.endedBy.get(principal);
    while (count.tasks >= maxPerPrincipal || count.bytes >= maxBytesPerPrincipal) {
      if (!this.forgetExpired(queue)) {
        const byCount = count.tasks >= maxPerPrincipal;
        const what = byCount ? 'tasks kept' : 'bytes of retained messages';
        return { scope: 'principal', limit: byCount ? maxPerPrincipal : maxBytesPerPrincipal, what, ...this.freesIn(queue) };
      }
    }
    while (this.byKey.size >= maxTotal) {
      if (!this.forgetExpired(this.endedAll))
        return { scope: 'agent', limit: maxTotal, what: 'tasks kept', ...this.freesIn(this.endedAll) };
    }
    return null;
  }

  private freesIn(queue: EndedQueue<Task> | undefined): { freesInMs?: number } {
    const oldest = queue?.peek((t) => t.tableBytes !== undefined && isTerminal(t.state));
    return oldest ? { freesInMs: Math.max(0, (oldest.tableEndedAt ?? 0) + this.limits.retentionMs - this.now()) } : {};
  }

  all(): IterableIterator<Task> {
    return this.byKey.values();
  }

  /** Tasks kept, terminal or not. */
  get size(): number {
    return this.byKey.size;
  }

  /** Tasks kept for `principal`, terminal or not, and the bytes their retained messages take. */
  usage(principal: string): { tasks: number; bytes: number } {
    return { ...this.countOf(principal) };
  }

  /** Non-terminal tasks, optionally only those of one session or one share. */
  activeCount(filter: { sessionId?: string; principal?: string } = {}): number {
    const counts = this.activeCounts(filter.sessionId ?? '', filter.principal ?? '');
    return filter.sessionId !== undefined ? counts.session : filter.principal !== undefined ? counts.principal : counts.all;
  }

  /** The sessions that carry a task not yet terminal: those an agent may not end to make room (spec: limits#sources). */
  sessionsWithUnfinishedTasks(): Set<string> {
    const ids = new Set<string>();
    for (const t of this.active) if (!isTerminal(t.state)) ids.add(t.sessionId);
    return ids;
  }

  /**
   * Non-terminal tasks of one session, of one share (a principal, or an origin's anonymous
   * sessions), and in all, counted in one pass: what the BUSY checks of every request ask
   * (spec: limits#concurrency, limits#sources). A session or share of '' counts nothing.
   */
  activeCounts(sessionId: string, share: string): { session: number; principal: number; all: number } {
    let ofSession = 0;
    let ofPrincipal = 0;
    let all = 0;
    for (const t of this.active) {
      if (isTerminal(t.state)) {
        this.active.delete(t);
        continue;
      }
      all++;
      if (t.sessionId === sessionId) ofSession++;
      if (shareOf(t) === share) ofPrincipal++;
    }
    return { session: ofSession, principal: ofPrincipal, all };
  }

  /** Forgets the oldest task of `queue` whose retention has passed; false when there is none. */
  private forgetExpired(queue: EndedQueue<Task> | undefined): boolean {
    const oldest = queue?.peek((t) => t.tableBytes !== undefined && isTerminal(t.state));
    if (!oldest || this.now() - (oldest.tableEndedAt ?? 0) < this.limits.retentionMs) return false;
    this.forget(oldest);
    this.onEvict(oldest);
    return true;
  }

  private forget(task: Task): void {
    if (this.byKey.get(task.principal, task.taskId) !== task) return;
    this.byKey.delete(task.principal, task.taskId);
    this.active.delete(task);
    const count = this.countOf(task.principal);
    count.tasks--;
    count.bytes -= task.tableBytes ?? 0;
    task.tableBytes = undefined;
    if (count.tasks === 0) {
      this.counts.delete(task.principal);
      this.endedBy.delete(task.principal);
    }
  }

  private countOf(principal: string): { tasks: number; bytes: number } {
    let count = this.counts.get(principal);
    if (!count) this.counts.set(principal, (count = { tasks: 0, bytes: 0 }));
    return count;
  }
}

/** An idempotency record: which task a key produced, and whether a retryable ending released it. */
export interface IdempotencyRecord {
  principal: string;
  capability: string;
  key: string;
  fingerprint: string;
  taskId: string;
  released: boolean;
}

/** Idempotency records keyed by (principal, capability, key) (spec: idempotency). */
export class IdempotencyTable {
  /** By principal and capability, then by key: no key is built from the three for a lookup. */
  private readonly records = new PairMap<Map<string, IdempotencyRecord>>();

  get(principal: string, capability: string, key: string): IdempotencyRecord | undefined {
    return this.records.get(principal, capability)?.get(key);
  }

  set(record: IdempotencyRecord): void {
    let keys = this.records.get(record.principal, record.capability);
    if (!keys) this.records.set(record.principal, record.capability, (keys = new Map()));
    keys.set(record.key, record);
  }

  *all(): IterableIterator<IdempotencyRecord> {
    for (const keys of this.records.values()) yield* keys.values();
  }

  /** Forgets the record that points at `task`, when its task is forgotten. */
  forget(task: Task): void {
    if (task.idempotencyKey === undefined) return;
    const keys = this.records.get(task.principal, task.capability);
    if (keys?.get(task.idempotencyKey)?.taskId !== task.taskId) return;
    keys.delete(task.idempotencyKey);
    if (keys.size === 0) this.records.delete(task.principal, task.capability);
  }
}

/** An error as a task's failure, keeping only the payload members. */
export function outcomeError(error: ErrorPayload): ErrorPayload {
  const out: ErrorPayload = { code: error.code, message: error.message, retryable: error.retryable };
  if (error.details !== undefined) out.details = error.details;
  return out;
}
