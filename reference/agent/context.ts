/**
 * The context of one task, as handler.ts describes it to capability authors: it streams
 * progress, output and logs, submits plans, gates side effects behind an approved plan and
 * journals them, records checkpoints for hand-off and restart, and carries an AbortSignal that
 * fires on cancel, deadline, shutdown and session loss (spec: tasks, plans, durability).
 */
import type { PayloadOf } from '../../schemas/src/index.ts';
import { errorPayload, TapError } from '../core/errors.ts';
import { isTerminal } from '../core/states.ts';
import { delegationOf } from '../core/delegation.ts';
import { traceContextOf, type TraceContext } from '../core/trace-context.ts';
import { TaskAborted, type AgentStore, type InputAsk, type PlanDecision, type PlanDraft, type TaskContext } from './handler.ts';
import { fitsUtf8, utf8ByteLength } from '../core/decode.ts';
import { askInput } from './input.ts';
import { submitPlan } from './plans.ts';
import type { Runtime } from './runtime.ts';
import type { Session } from './sessions.ts';
import type { TaskHost } from './task-host.ts';
import { currentPlan, streamMetadata, type Task } from './tasks.ts';

const LEVELS = new Set(['debug', 'info', 'warn', 'error']);
/** What output returns when nothing waits: one settled promise for all. */
const DONE: Promise<void> = Promise.resolve();

/** The store of an agent as its tasks see it, made once per runtime. */
const stores = new WeakMap<Runtime, AgentStore>();

function storeOf(rt: Runtime): AgentStore {
  let store = stores.get(rt);
  if (!store) {
    store = {
      get: (key) => rt.store.get(key),
      set: (key, value) => {
        rt.persist({ t: 'kv', key, value });
        rt.store.set(key, value);
      },
    };
    stores.set(rt, store);
  }
  return store;
}

/** Builds the context of one task. */
export function createContext(rt: Runtime, runner: TaskHost, task: Task): TaskContext {
  return new Context(rt, runner, task);
}

/**
 * One task's context. A class, so that an open task holds only its fields: its methods live on
 * the prototype, not in a dozen closures per task (spec: limits#table-limits).
 */
class Context implements TaskContext {
  readonly taskId: string;
  readonly capability: string;
  readonly principal: string;
  readonly sessionId: string;
  readonly authorization: Task['authorization'];
  readonly attempt: number;
  readonly trace: Task['trace'];
  readonly traceContext: TraceContext | undefined;
  readonly previousTaskId: string | undefined;
  readonly restored: { state: Record<string, unknown> } | undefined;
  readonly store: AgentStore;
  /** The overhead of the task's output events in the session that carries it now. */
  private overheadFor: { session: Session; bytes: number } | undefined = undefined;
  private deadlineDate: Date | undefined = undefined;

  constructor(
    private readonly rt: Runtime,
    private readonly runner: TaskHost,
    private readonly task: Task,
  ) {
    this.taskId = task.taskId;
    this.capability = task.capability;
    this.principal = task.principal;
    this.sessionId = task.sessionId;
    this.authorization = task.authorization;
    this.attempt = task.attempt;
    this.trace = task.trace;
    this.traceContext = traceContextOf(task.carried);
    this.previousTaskId = task.previousTaskId;
    this.restored = task.restored ? { state: task.restored.state } : undefined;
    this.store = storeOf(rt);
  }

  /** The effective deadline, made when first read (a Date for every open task would weigh 100 bytes each). */
  get deadline(): Date {
    this.deadlineDate ??= new Date(this.task.deadline);
    return this.deadlineDate;
  }

  /** Made when read: most tasks delegate nothing (spec: mesh#delegation). */
  get delegation(): readonly string[] {
    return delegationOf(this.task.delegation, this.rt.agentId);
  }

  get signal(): AbortSignal {
    return this.task.abort.signal;
  }

  private live(): boolean {
    return !isTerminal(this.task.state) && !this.task.abort.aborted;
  }

  progress(p: { percent?: number; stage?: string; message?: string }): void {
    // A quiet task sends no events, so none is built (spec: tasks#quiet-tasks).
    if (!this.live() || this.task.quiet) return;
    const payload: { kind: 'progress'; percent?: number; stage?: string; message?: string } = { kind: 'progress' };
    if (typeof p.percent === 'number' && Number.isFinite(p.percent)) payload.percent = Math.min(100, Math.max(0, p.percent));
    if (typeof p.stage === 'string') payload.stage = p.stage.slice(0, 256);
    if (typeof p.message === 'string') payload.message = p.message.slice(0, 65536);
    if (payload.percent === undefined && payload.stage === undefined && payload.message === undefined) payload.message = '';
    // The line above gives it one of percent, stage and message, as a progress event needs (spec: tasks#events).
    this.runner.emit(this.task, 'task.event', payload as PayloadOf<'task.event'>);
  }

  output(data: unknown): Promise<void> {
    const { rt, task } = this;
    if (!this.live() || task.quiet) return DONE;
    const session = rt.sessionOf(task);
    // spec: tasks#events: no output events without streaming, in the session or the capability.
    if (!session?.params.streaming || rt.capabilities.get(task.capability)?.capability.streaming === false) return DONE;
    if (this.overheadFor?.session !== session) this.overheadFor = { session, bytes: overhead(session, task) };
    for (const piece of splitOutput(data, session.params.max_message_bytes - this.overheadFor.bytes)) {
      this.runner.emit(task, 'task.event', { kind: 'output', data: piece });
    }
    return session.writable();
  }

  log(message: string, level: 'debug' | 'info' | 'warn' | 'error' = 'info'): void {
    if (!this.live() || this.task.quiet) return;
    this.runner.emit(this.task, 'task.event', {
      kind: 'log',
      level: LEVELS.has(level) ? level : 'info',
      message: String(message).slice(0, 65536),
    });
  }

  submitPlan(draft: PlanDraft, feedback?: string): Promise<PlanDecision> {
    return submitPlan(this.rt, this.runner, this.task, draft, feedback);
  }

  askInput(ask: InputAsk): Promise<unknown> {
    return askInput(this.rt, this.runner, this.task, ask);
  }

  async sideEffect<T>(fn: () => T | Promise<T>): Promise<T> {
    const { rt, runner, task } = this;
    if (!this.live()) throw task.abort.reason ?? new TaskAborted('ended', 'the task has ended');
    const plan = currentPlan(task);
    if (plan && plan.state !== 'executing')
      throw new Error(`side effects wait for an approved plan; plan ${plan.plan.plan_id} is ${plan.state}`);
    if (rt.now() >= task.deadline) {
      runner.deadlinePassed(task);
      throw task.abort.reason;
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
      throw task.abort.reason;
    }
    try {
      return await fn();
    } finally {
      task.effectsEnded++;
      rt.persist({ t: 'effect', principal: task.principal, task_id: task.taskId, phase: 'end' });
    }
  }

  checkResource(resource: string): void {
    const listed = this.task.authorization?.resources ?? [];
    if (listed.length > 0 && !listed.includes(resource)) {
      throw new TapError(errorPayload('PERMISSION_DENIED', `the grant does not list the resource ${resource}`, { resource }));
    }
  }

  checkpoint(state: Record<string, unknown>, steps: { completed?: string[]; remaining?: string[]; resume_hint?: string } = {}): void {
    const { rt, task } = this;
    if (isTerminal(task.state)) return;
    task.checkpoint = {
      state,
      completed_steps: steps.completed ?? task.checkpoint?.completed_steps ?? [],
      remaining_steps: steps.remaining ?? task.checkpoint?.remaining_steps ?? [],
      resume_hint: steps.resume_hint ?? task.checkpoint?.resume_hint ?? `Resume ${task.capability} from the checkpoint.`,
      effects: task.effectsEnded,
    };
    rt.persist({ t: 'ckpt', principal: task.principal, task_id: task.taskId, checkpoint: task.checkpoint });
  }

  sleep(ms: number): Promise<void> {
    const { rt } = this;
    const abort = this.task.abort;
    if (abort.aborted) return Promise.reject(abort.reason);
    // The abort flag's listener, not an AbortSignal: a sleeping task holds a timer and two closures.
    return new Promise<void>((resolve, reject) => {
      const stop = abort.listen(() => {
        rt.clock.clearTimeout(timer);
        reject(abort.reason);
      });
      const timer = rt.clock.setTimeout(() => {
        stop();
        resolve();
      }, ms);
    });
  }

  now(): number {
    return this.rt.now();
  }
}

/**
 * Bytes an output event of the task takes in the session besides its data, at their most: the
 * longest message id and sequence, the task's trace, the signature. It holds for every event of
 * the task in the session, so it is worked out once.
 */
function overhead(session: Session, task: Task): number {
  const text = session.message(
    'task.event',
    { kind: 'output', data: null },
    {
      task_id: task.taskId,
      sequence: Number.MAX_SAFE_INTEGER,
      metadata: streamMetadata(task),
      rebuild: { message_id: 'm'.repeat(128), timestamp: new Date(0).toISOString() },
    },
  );
  return utf8ByteLength(text) - 4;
}

/** Splits output data so that each piece's JSON fits `budget` bytes (spec: limits#message-size). */
export function splitOutput(data: unknown, budget: number): unknown[] {
  const json = JSON.stringify(data === undefined ? null : data);
  if (fitsUtf8(json, budget)) return [data === undefined ? null : data];
  const tooLarge = (): TapError =>
    new TapError(
      errorPayload('MESSAGE_TOO_LARGE', `output of ${utf8ByteLength(json)} bytes does not fit max_message_bytes and cannot be split`),
    );
  if (typeof data === 'string') {
    const pieces: string[] = [];
    let piece = '';
    let size = 2;
    for (const ch of data) {
      const cost = utf8ByteLength(JSON.stringify(ch)) - 2;
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
      const cost = utf8ByteLength(JSON.stringify(item === undefined ? null : item)) + 1;
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
