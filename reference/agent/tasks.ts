/**
 * Tasks and idempotency records as the agent keeps them: tasks keyed by (principal, task_id),
 * idempotency records by (principal, capability, key), both bounded (spec: tasks#identity,
 * idempotency).
 */
import type { PayloadOf, TaskState } from '../../schemas/src/index.ts';
import { canonicalize } from '../core/jcs.ts';
import { isTerminal } from '../core/states.ts';
import type { ErrorPayload } from '../core/errors.ts';
import type { PlanRecord } from './plans.ts';
import type { TimerHandle } from './options.ts';

export type Authorization = NonNullable<PayloadOf<'task.request'>['authorization']>;
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

/** One task of one principal. */
export interface Task {
  principal: string;
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
  checkpoint?: Checkpoint;
  /** Side effects begun and ended; open > 0 means one is under way (spec: durability#indeterminate). */
  effectsBegun: number;
  effectsEnded: number;
  abort: AbortController;
  timers: { deadline?: TimerHandle; release?: TimerHandle };
  /** Set by a restart: the checkpoint the handler resumes from. */
  restored?: Checkpoint | { state: Record<string, unknown> };
  /** Resolves once the handler settled (or at once for a task restored terminal). */
  settled?: Promise<void>;
}

/** The key of a task in a table. */
export function taskKey(principal: string, taskId: string): string {
  return `${principal}\u0000${taskId}`;
}

/** "The same request": the RFC 8785 form of (capability, input) (spec: idempotency#fingerprint). */
export function fingerprint(capability: string, input: unknown): string {
  return canonicalize([capability, input === undefined ? null : input]);
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
  return snap;
}

/** The tasks of every principal, with counts for the BUSY caps and a bound on terminal ones. */
export class TaskTable {
  private readonly byKey = new Map<string, Task>();
  private readonly terminalOrder: string[] = [];
  /**
   * The tasks not yet terminal, so that the BUSY checks of every request cost the number of
   * running tasks, not the number retained. A task that ended without `ended` is dropped here
   * the next time it is met.
   */
  private readonly active = new Set<Task>();

  constructor(
    private readonly maxTerminal: number,
    private readonly onEvict: (task: Task) => void = () => {},
  ) {}

  /** The task `taskId` of `principal`; never one of another principal (spec: authorization#isolation). */
  get(principal: string, taskId: string): Task | undefined {
    return this.byKey.get(taskKey(principal, taskId));
  }

  add(task: Task): void {
    this.byKey.set(taskKey(task.principal, task.taskId), task);
    if (isTerminal(task.state)) this.ended(task);
    else this.active.add(task);
  }

  /** Records that `task` became terminal; the oldest terminal tasks beyond the bound are forgotten. */
  ended(task: Task): void {
    this.active.delete(task);
    this.terminalOrder.push(taskKey(task.principal, task.taskId));
    while (this.terminalOrder.length > this.maxTerminal) {
      const key = this.terminalOrder.shift()!;
      const old = this.byKey.get(key);
      if (old && isTerminal(old.state)) {
        this.byKey.delete(key);
        this.onEvict(old);
      }
    }
  }

  all(): IterableIterator<Task> {
    return this.byKey.values();
  }

  /** Non-terminal tasks, optionally only those of one session or one principal. */
  activeCount(filter: { sessionId?: string; principal?: string } = {}): number {
    let n = 0;
    for (const t of this.active) {
      if (isTerminal(t.state)) {
        this.active.delete(t);
        continue;
      }
      if (filter.sessionId !== undefined && t.sessionId !== filter.sessionId) continue;
      if (filter.principal !== undefined && t.principal !== filter.principal) continue;
      n++;
    }
    return n;
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
  private readonly records = new Map<string, IdempotencyRecord>();

  private static keyOf(principal: string, capability: string, key: string): string {
    return `${principal}\u0000${capability}\u0000${key}`;
  }

  get(principal: string, capability: string, key: string): IdempotencyRecord | undefined {
    return this.records.get(IdempotencyTable.keyOf(principal, capability, key));
  }

  set(record: IdempotencyRecord): void {
    this.records.set(IdempotencyTable.keyOf(record.principal, record.capability, record.key), record);
  }

  all(): IterableIterator<IdempotencyRecord> {
    return this.records.values();
  }

  /** Forgets the record that points at `task`, when its task is forgotten. */
  forget(task: Task): void {
    if (task.idempotencyKey === undefined) return;
    const k = IdempotencyTable.keyOf(task.principal, task.capability, task.idempotencyKey);
    if (this.records.get(k)?.taskId === task.taskId) this.records.delete(k);
  }
}

/** An error as a task's failure, keeping only the payload members. */
export function outcomeError(error: ErrorPayload): ErrorPayload {
  const out: ErrorPayload = { code: error.code, message: error.message, retryable: error.retryable };
  if (error.details !== undefined) out.details = error.details;
  return out;
}
