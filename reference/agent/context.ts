/**
 * What a capability handler sees: `async (input, ctx) => output`. The context streams
 * progress, output and logs, submits plans, gates side effects behind an approved plan and
 * journals them, records checkpoints for hand-off and restart, and carries an AbortSignal that
 * fires on cancel, deadline, shutdown and session loss (spec: tasks, plans, durability).
 */
import { errorPayload, TapError } from '../core/errors.ts';
import { isTerminal } from '../core/states.ts';
import type { Authorization, Task } from './tasks.ts';
import { currentPlan } from './tasks.ts';
import { byteLength } from './outbound.ts';
import { submitPlan, type PlanDecision, type PlanDraft } from './plans.ts';
import type { Runtime } from './runtime.ts';
import type { TaskRunner } from './task-runner.ts';

/** Why a task's signal fired. */
export type AbortKind = 'cancel' | 'deadline' | 'shutdown' | 'session_lost' | 'ended';

/** The reason of a task's AbortSignal. */
export class TaskAborted extends Error {
  override name = 'TaskAborted';
  constructor(
    readonly kind: AbortKind,
    message: string,
  ) {
    super(message);
  }
}

/** The agent-wide durable key-value store (journaled with a state directory). */
export interface AgentStore {
  get(key: string): unknown;
  /** Sets a value; journaled before it returns. */
  set(key: string, value: unknown): void;
}

/** The handler's view of its task. */
export interface TaskContext {
  readonly taskId: string;
  readonly capability: string;
  /** The principal the task belongs to (spec: sessions#principals). */
  readonly principal: string;
  readonly sessionId: string;
  readonly authorization?: Authorization;
  /** The effective deadline (spec: tasks#deadlines). */
  readonly deadline: Date;
  /** metadata.attempt of the request (1 when absent). */
  readonly attempt: number;
  /** The task this one retries after a retryable ending (spec: idempotency#retryable-endings). */
  readonly previousTaskId?: string;
  /** Fires on cancel, deadline, shutdown or session loss; its reason is a TaskAborted. */
  readonly signal: AbortSignal;
  /** After a restart: the last checkpoint, to continue from (spec: durability#restart). */
  readonly restored?: { state: Record<string, unknown> };
  readonly store: AgentStore;
  /** Sends a progress event. */
  progress(p: { percent?: number; stage?: string; message?: string }): void;
  /**
   * Sends output; data too large for one message is split across output events (a string into
   * consecutive pieces, an array into consecutive slices); anything else that does not fit
   * throws MESSAGE_TOO_LARGE (spec: limits#message-size). Not sent when the session does not stream.
   */
  output(data: unknown): void;
  log(message: string, level?: 'debug' | 'info' | 'warn' | 'error'): void;
  /**
   * Submits a plan and waits for the decision: resolves on approved (the plan is executing)
   * and on needs_revision (submit a changed plan next; it becomes a revision automatically);
   * a rejection ends the task failed PLAN_REJECTED and rejects (spec: plans).
   */
  submitPlan(draft: PlanDraft, feedback?: string): Promise<PlanDecision>;
  /**
   * Runs a side effect: only when the task has no plan or its plan is approved and executing,
   * after re-checking the deadline; journaled begin and end, so a crash in between ends the task
   * failed and indeterminate, never re-run (spec: plans#gate, durability#indeterminate).
   */
  sideEffect<T>(fn: () => T | Promise<T>): Promise<T>;
  /**
   * Throws PERMISSION_DENIED unless the grant allows acting on `resource`: a grant that lists
   * resources allows only those (spec: authorization#grants).
   */
  checkResource(resource: string): void;
  /** Records where the task stands, for hand-off and restart (spec: shutdown#handoff). */
  checkpoint(state: Record<string, unknown>, steps?: { completed?: string[]; remaining?: string[]; resume_hint?: string }): void;
  /** Waits `ms` on the agent clock; rejects with the signal's reason when it fires. */
  sleep(ms: number): Promise<void>;
  now(): number;
}

/** A capability handler. */
export type Handler = (input: any, ctx: TaskContext) => unknown;

const LEVELS = new Set(['debug', 'info', 'warn', 'error']);

/** Builds the context of one task. */
export function createContext(rt: Runtime, runner: TaskRunner, task: Task): TaskContext {
  const live = (): boolean => !isTerminal(task.state) && !task.abort.signal.aborted;
  const store: AgentStore = {
    get: (key) => rt.store.get(key),
    set: (key, value) => {
      rt.persist({ t: 'kv', key, value });
      rt.store.set(key, value);
    },
  };
  const ctx: TaskContext = {
    taskId: task.taskId,
    capability: task.capability,
    principal: task.principal,
    sessionId: task.sessionId,
    authorization: task.authorization,
    deadline: new Date(task.deadline),
    attempt: task.attempt,
    previousTaskId: task.previousTaskId,
    signal: task.abort.signal,
    restored: task.restored ? { state: task.restored.state } : undefined,
    store,
    progress(p) {
      if (!live()) return;
      const payload: { kind: 'progress'; percent?: number; stage?: string; message?: string } = { kind: 'progress' };
      if (typeof p.percent === 'number' && Number.isFinite(p.percent)) payload.percent = Math.min(100, Math.max(0, p.percent));
      if (typeof p.stage === 'string') payload.stage = p.stage.slice(0, 256);
      if (typeof p.message === 'string') payload.message = p.message.slice(0, 65536);
      if (payload.percent === undefined && payload.stage === undefined && payload.message === undefined) payload.message = '';
      runner.emit(task, 'task.event', payload);
    },
    output(data) {
      if (!live()) return;
      const session = rt.sessionOf(task);
      // spec: tasks#events: no output events without streaming, in the session or the capability.
      if (!session?.params.streaming || rt.capabilities.get(task.capability)?.capability.streaming === false) return;
      for (const piece of splitOutput(data, session.params.max_message_bytes - overhead(session.message.bind(session), task))) {
        runner.emit(task, 'task.event', { kind: 'output', data: piece });
      }
    },
    log(message, level = 'info') {
      if (!live()) return;
      runner.emit(task, 'task.event', { kind: 'log', level: LEVELS.has(level) ? level : 'info', message: String(message).slice(0, 65536) });
    },
    submitPlan: (draft, feedback) => submitPlan(rt, runner, task, draft, feedback),
    async sideEffect(fn) {
      if (!live()) throw task.abort.signal.reason ?? new TaskAborted('ended', 'the task has ended');
      const plan = currentPlan(task);
      if (plan && plan.state !== 'executing')
        throw new Error(`side effects wait for an approved plan; plan ${plan.plan.plan_id} is ${plan.state}`);
      if (rt.now() >= task.deadline) {
        runner.deadlinePassed(task);
        throw task.abort.signal.reason;
      }
      // spec: authorization#grants: no side-effecting step after the grant expired.
      const expires = task.authorization ? Date.parse(task.authorization.expires_at) : Infinity;
      if (!(expires > rt.now())) {
        const error = errorPayload('AUTHORIZATION_EXPIRED', `the grant expired at ${task.authorization!.expires_at}; the step did not run`);
        runner.finish(task, { status: 'failed', error });
        throw new TapError(error);
      }
      rt.persist({ t: 'effect', principal: task.principal, task_id: task.taskId, phase: 'begin' });
      task.effectsBegun++;
      // The journal write takes time: the deadline is checked again right before the step runs,
      // and a step that did not run closes its record so a restart does not take it for indeterminate.
      if (rt.now() >= task.deadline) {
        task.effectsEnded++;
        rt.persist({ t: 'effect', principal: task.principal, task_id: task.taskId, phase: 'end' });
        runner.deadlinePassed(task);
        throw task.abort.signal.reason;
      }
      try {
        return await fn();
      } finally {
        task.effectsEnded++;
        rt.persist({ t: 'effect', principal: task.principal, task_id: task.taskId, phase: 'end' });
      }
    },
    checkResource(resource) {
      const listed = task.authorization?.resources ?? [];
      if (listed.length > 0 && !listed.includes(resource)) {
        throw new TapError(errorPayload('PERMISSION_DENIED', `the grant does not list the resource ${resource}`, { resource }));
      }
    },
    checkpoint(state, steps = {}) {
      if (isTerminal(task.state)) return;
      task.checkpoint = {
        state,
        completed_steps: steps.completed ?? task.checkpoint?.completed_steps ?? [],
        remaining_steps: steps.remaining ?? task.checkpoint?.remaining_steps ?? [],
        resume_hint: steps.resume_hint ?? task.checkpoint?.resume_hint ?? `Resume ${task.capability} from the checkpoint.`,
        effects: task.effectsEnded,
      };
      rt.persist({ t: 'ckpt', principal: task.principal, task_id: task.taskId, checkpoint: task.checkpoint });
    },
    sleep(ms) {
      return new Promise<void>((resolve, reject) => {
        const signal = task.abort.signal;
        if (signal.aborted) return reject(signal.reason);
        const onAbort = (): void => {
          rt.clock.clearTimeout(timer);
          reject(signal.reason);
        };
        const timer = rt.clock.setTimeout(() => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        }, ms);
        signal.addEventListener('abort', onAbort, { once: true });
      });
    },
    now: () => rt.now(),
  };
  return ctx;
}

/** Bytes an output event takes besides its data. */
function overhead(message: (type: 'task.event', payload: { kind: 'output'; data: unknown }, extras: object) => string, task: Task): number {
  return byteLength(message('task.event', { kind: 'output', data: null }, { task_id: task.taskId, sequence: Number.MAX_SAFE_INTEGER })) - 4;
}

/** Splits output data so that each piece's JSON fits `budget` bytes (spec: limits#message-size). */
export function splitOutput(data: unknown, budget: number): unknown[] {
  const json = JSON.stringify(data === undefined ? null : data);
  if (byteLength(json) <= budget) return [data === undefined ? null : data];
  const tooLarge = (): TapError =>
    new TapError(
      errorPayload('MESSAGE_TOO_LARGE', `output of ${byteLength(json)} bytes does not fit max_message_bytes and cannot be split`),
    );
  if (typeof data === 'string') {
    const pieces: string[] = [];
    let piece = '';
    let size = 2;
    for (const ch of data) {
      const cost = byteLength(JSON.stringify(ch)) - 2;
      if (cost + 2 > budget) throw tooLarge();
      if (size + cost > budget) {
        pieces.push(piece);
        piece = '';
        size = 2;
      }
      piece += ch;
      size += cost;
    }
    if (piece !== '') pieces.push(piece);
    return pieces;
  }
  if (Array.isArray(data)) {
    const pieces: unknown[][] = [];
    let slice: unknown[] = [];
    let size = 2;
    for (const item of data) {
      const cost = byteLength(JSON.stringify(item === undefined ? null : item)) + 1;
      if (cost + 2 > budget) throw tooLarge();
      if (size + cost > budget) {
        pieces.push(slice);
        slice = [];
        size = 2;
      }
      slice.push(item);
      size += cost;
    }
    if (slice.length > 0) pieces.push(slice);
    return pieces;
  }
  throw tooLarge();
}
