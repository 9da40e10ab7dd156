/**
 * Runs tasks through the state machine of task-states.json: sequenced, retained and journaled
 * messages, state events, the handler, deadlines, cancellation, hand-off and the one result
 * (spec: tasks#states, tasks#sequence, tasks#cancellation, tasks#deadlines, shutdown#handoff).
 */
import type { MessageType, PayloadOf, TaskState } from '../../schemas/src/index.ts';
import { errorEntry, errorPayload, TapError, type ErrorPayload } from '../core/errors.ts';
import { compareVersions, parseVersion } from '../core/versions.ts';
import { canTransition, isTerminal } from '../core/states.ts';
import { delegationOf } from '../core/delegation.ts';
import { traceContextOf } from '../core/trace-context.ts';
import { runHandler, type TaskScope } from '../task-scope.ts';
import type { TapSpan, Telemetry } from '../telemetry.ts';
import { createContext } from './context.ts';
import { Deadlines } from './deadlines.ts';
import { CapabilityError, TaskAborted, type AbortKind } from './handler.ts';
import { iso } from './outbound.ts';
import { fitsUtf8 } from '../core/decode.ts';
import { appended } from '../core/appended.ts';
import { batches } from '../core/batches.ts';
import { inspectValue, MAX_NESTING_DEPTH, nestedDeeperThan } from '../core/ijson.ts';
import { withdrawPlan, markPlan } from './plans.ts';
import { withdrawInput } from './input.ts';
import type { Runtime } from './runtime.ts';
import type { TaskHost } from './task-host.ts';
import { pendingInput, TaskAbort } from './model.ts';
import { currentPlan, outcomeError, snapshotOf, streamMetadata, type Task, type TaskOutcome } from './tasks.ts';

/** The longest reply_to a snapshot can carry: a message_id of 128 characters (spec: envelope#message-id). */
const LONGEST_REPLY_TO = 'x'.repeat(128);
/**
 * How many bytes a task's snapshot can hold beyond its task.result: the snapshot carries the same
 * result, and besides it only ASCII members of bounded size (a 128-character reply_to, the
 * capability, the state, two timestamps, the last sequence, the plan's id and state, the
 * previous task id). Bounded by a test against the largest of each.
 */
export const SNAPSHOT_EXTRA_BYTES = 2048;

/** The span of each task while it runs, when the agent traces with OpenTelemetry. */
const spans = new WeakMap<Task, TapSpan>();

/** The abort reason of every task that ended normally: one shared instance, since each finished task releases its signal. */
const ENDED = new TaskAborted('ended', 'the task has ended');
/** The abort ended tasks share when nothing listened to their own (TaskAbort.end). */
const ENDED_ABORT = new TaskAbort();
ENDED_ABORT.abort(ENDED);

/** Drives every task of one runtime. */
export class TaskRunner implements TaskHost {
  /** The open tasks' deadlines, behind one timer. */
  private readonly deadlines: Deadlines<Task>;

  /** Handlers start in a microtask, those of one burst of requests in the same one. */
  private readonly later = batches((err) => this.rt.log('error', `starting a handler: ${(err as Error)?.stack ?? String(err)}`));

  constructor(private readonly rt: Runtime) {
    this.deadlines = new Deadlines(rt.clock, (task) => this.deadlinePassed(task));
  }

  /**
   * Sends the next message of a task's stream: assigns the sequence, journals it, retains it for
   * resume and delivers it to the task's session (spec: tasks#sequence, sessions#retention).
   */
  emit<T extends MessageType>(task: Task, type: T, payload: PayloadOf<T>, replyTo?: string, deliver = true): string {
    // A quiet task's stream has no acceptance and no events (spec: tasks#quiet-tasks).
    if (task.quiet && (type === 'task.event' || type === 'task.accepted')) return '';
    const session = this.rt.sessionOf(task);
    if (!session) throw new Error(`task ${task.taskId} has no session`);
    const sequence = task.lastSequence + 1;
    const text = session.message(type, payload, { task_id: task.taskId, sequence, reply_to: replyTo, metadata: streamMetadata(task) });
    this.commit(task, sequence, text);
    if (deliver) session.deliver(text);
    return text;
  }

  /** Records a serialized message of the task as sent: journal, sequence, retention. */
  commit(task: Task, sequence: number, text: string): void {
    // The record is made only for a journal to write.
    if (this.rt.journal) {
      this.rt.persist({
        t: 'msg',
        principal: task.principal,
        task_id: task.taskId,
        seq: sequence,
        text,
        state: task.state,
        at: task.updatedAt,
      });
    }
    task.lastSequence = sequence;
    task.retained = appended(task.retained, text);
    let delta = text.length;
    const max = this.rt.settings.maxRetainedMessages;
    while (task.retained.length > max) {
      delta -= task.retained.shift()!.length;
      task.firstRetained++;
    }
    this.rt.tasks.retainedChanged(task, delta);
  }

  /** Arms the effective deadline (spec: tasks#deadlines). */
  armDeadline(task: Task): void {
    this.deadlines.add(task);
  }

  /** Starts the handler of an accepted task: accepted → running, or accepted → failed on bad input. */
  start(task: Task): void {
    if (task.state !== 'accepted') return;
    const entry = this.rt.capabilities.get(task.capability);
    if (!entry) {
      this.finish(task, { status: 'failed', error: errorPayload('CAPABILITY_NOT_SUPPORTED', `capability ${task.capability} is gone`) });
      return;
    }
    this.transition(task, 'running');
    this.run(task);
  }

  /** Calls the handler of a running task and turns its outcome into the task's result. */
  run(task: Task): void {
    const entry = this.rt.capabilities.get(task.capability)!;
    const ctx = createContext(this.rt, this, task);
    const settled = (value: unknown, threw: boolean): void => this.settled(task, value, threw);
    const call = (): void =>
      runHandler(
        () => scopeOf(this.rt.agentId, task),
        () => entry.handler(task.input, ctx),
        settled,
      );
    // With telemetry, the task's span starts before its handler: what the handler submits is its child.
    if (!this.rt.telemetry) return this.later(call);
    void this.rt.telemetry.then((t) => t && this.startSpan(t, task)).then(call, (err: unknown) => settled(err, true));
  }

  /** A handler's outcome: its task's result. A fault in handling it is logged, never left in a promise nobody awaits. */
  private settled(task: Task, value: unknown, threw: boolean): void {
    try {
      if (threw) this.handlerThrew(task, value);
      else this.handlerReturned(task, value);
    } catch (err) {
      this.rt.log('error', `task ${task.taskId}: ${(err as Error)?.stack ?? String(err)}`);
    }
  }

  /** Starts the span of one task attempt, under the request's trace context (spec: envelope#trace-context). */
  private startSpan(telemetry: Telemetry, task: Task): void {
    if (isTerminal(task.state) || spans.has(task)) return;
    const span = telemetry.start(
      `execute ${task.capability}`,
      'server',
      { traceContext: traceContextOf(task.carried) },
      {
        'tap.task_id': task.taskId,
        'tap.capability': task.capability,
        'tap.attempt': task.attempt,
        'tap.agent': this.rt.agentId,
        ...(task.delegation ? { 'tap.delegation.depth': task.delegation.length } : {}),
      },
    );
    if (span) spans.set(task, span);
  }

  private handlerReturned(task: Task, output: unknown): void {
    if (isTerminal(task.state)) return;
    if (task.state === 'awaiting_approval' || task.state === 'input_required') {
      const awaited = task.state === 'awaiting_approval' ? 'its plan awaited a decision' : 'its input request awaited an answer';
      this.finish(task, {
        status: 'failed',
        error: errorPayload('INTERNAL_ERROR', `the handler returned while ${awaited}`, undefined, { retryable: false }),
      });
      return;
    }
    // An output JSON cannot carry ends the task failed, saying why, rather than go out changed or
    // not at all (spec: envelope#encoding): the result is written with JSON.stringify.
    let unwritable: { path: string; message: string } | undefined;
    try {
      unwritable = inspectValue(output, 3);
    } catch (err) {
      unwritable = { path: '', message: `reading it to write it threw: ${(err as Error)?.message ?? String(err)}` };
    }
    if (unwritable) {
      const where = unwritable.path ? ` at ${unwritable.path}` : '';
      const what = unwritable.message.startsWith('nesting') ? `${unwritable.message}, or holds itself` : unwritable.message;
      this.rt.log('warn', `task ${task.taskId} (${task.capability}): the handler returned an output JSON cannot carry${where}: ${what}`);
      this.finish(task, {
        status: 'failed',
        error: errorPayload('INTERNAL_ERROR', `the handler's output is not JSON${where}: ${what}`, undefined, { retryable: false }),
      });
      return;
    }
    const plan = currentPlan(task);
    if (plan?.state === 'executing') markPlan(this.rt, task, plan, 'completed');
    this.finish(task, { status: 'completed', output: output === undefined ? null : output });
  }

  private handlerThrew(task: Task, err: unknown): void {
    if (isTerminal(task.state)) return;
    if (task.state === 'cancelling') {
      this.finish(task, { status: 'cancelled' });
      return;
    }
    if (err instanceof TapError) {
      this.finish(task, { status: 'failed', error: outcomeError(err.payload) });
      return;
    }
    if (err instanceof CapabilityError) {
      const error = errorPayload('CAPABILITY_FAILED', err.message || `${task.capability} failed`, err.details, {
        retryable: err.retryable,
      });
      this.finish(task, { status: 'failed', error });
      return;
    }
    if (err instanceof TaskAborted && err.kind === 'deadline') {
      this.deadlinePassed(task);
      return;
    }
    this.rt.log('warn', `task ${task.taskId} (${task.capability}) failed: ${(err as Error)?.message ?? String(err)}`);
    this.finish(task, {
      status: 'failed',
      error: errorPayload('INTERNAL_ERROR', `the capability failed: ${(err as Error)?.message ?? String(err)}`),
    });
  }

  /**
   * Moves a task to a non-terminal state; a state event follows for every transition except into
   * awaiting_approval, whose plan.submit is the event (spec: tasks#state-events).
   */
  transition(task: Task, to: TaskState, options: { event?: boolean } = {}): void {
    if (!canTransition(task.state, to) || isTerminal(to))
      throw new Error(`illegal transition ${task.state} → ${to} for task ${task.taskId}`);
    task.state = to;
    task.updatedAt = this.rt.now();
    if (options.event !== false && to !== 'awaiting_approval' && !task.quiet) {
      this.emit(task, 'task.event', { kind: 'state', state: to as 'running' | 'cancelling' | 'input_required' });
    }
  }

  /**
   * Ends a task with its one result (spec: tasks#result). A retryable error becomes
   * non-retryable once a side effect began; a retryable ending releases the idempotency key
   * (spec: idempotency#retryable-endings). A result too large to send ends failed
   * MESSAGE_TOO_LARGE, and so does one whose snapshot would be (spec: tasks#result-size). Returns false if the task had already ended.
   */
  finish(task: Task, outcome: TaskOutcome): boolean {
    if (isTerminal(task.state)) return false;
    if (!canTransition(task.state, outcome.status))
      throw new Error(`illegal transition ${task.state} → ${outcome.status} for task ${task.taskId}`);
    const rt = this.rt;
    this.deadlines.remove(task);
    if (task.releaseTimer !== undefined) rt.clock.clearTimeout(task.releaseTimer);
    task.releaseTimer = undefined;
    withdrawPlan(rt, task);
    withdrawInput(task);
    const session = rt.sessionOf(task);
    let result = inVersion(outcome, session?.version);
    if (result.error?.retryable && task.effectsBegun > 0) result = { ...result, error: unrepeatable(result.error, task) };
    task.state = result.status;
    task.updatedAt = rt.now();
    task.result = result;
    if (session) {
      const sequence = task.lastSequence + 1;
      let text = session.message('task.result', result, { task_id: task.taskId, sequence, metadata: streamMetadata(task) });
      // The result must fit in its task.result and in every snapshot that will carry it (spec: tasks#result-size).
      // A result that fits SNAPSHOT_EXTRA_BYTES under the limit fits every snapshot; only nearer to it is the snapshot built to be measured.
      const max = session.params.max_message_bytes;
      const snapshot = () => session.message('task.snapshot', snapshotOf(task, iso), { task_id: task.taskId, reply_to: LONGEST_REPLY_TO });
      // The snapshot holds the result one level deeper than task.result (spec: tasks#result-size, limits#nesting).
      const tooDeep = nestedDeeperThan(text, MAX_NESTING_DEPTH - 1) && nestedDeeperThan(snapshot(), MAX_NESTING_DEPTH);
      if (tooDeep || (!fitsUtf8(text, max - SNAPSHOT_EXTRA_BYTES) && (!fitsUtf8(text, max) || !fitsUtf8(snapshot(), max)))) {
        result = {
          status: 'failed',
          error: tooDeep
            ? errorPayload('MESSAGE_TOO_LARGE', `the result's snapshot would nest deeper than ${MAX_NESTING_DEPTH} levels`, {
                reason: 'nesting',
              })
            : errorPayload('MESSAGE_TOO_LARGE', `the result is larger than max_message_bytes (${session.params.max_message_bytes})`),
        };
        task.state = 'failed';
        task.result = result;
        text = session.message('task.result', result, { task_id: task.taskId, sequence, metadata: streamMetadata(task) });
      }
      this.commit(task, sequence, text);
      rt.tasks.ended(task);
      session.deliver(text);
    } else {
      rt.tasks.ended(task);
    }
    rt.monitor.taskFinished(task, rt.now(), session?.peerId);
    session?.drainCheck?.();
    if (result.error?.retryable && task.idempotencyKey !== undefined) {
      const record = rt.idempotency.get(task.principal, task.capability, task.idempotencyKey);
      if (record && record.taskId === task.taskId && !record.released) {
        rt.persist({ t: 'release', principal: task.principal, capability: task.capability, key: task.idempotencyKey });
        record.released = true;
      }
    }
    spans.get(task)?.end({ outcome: result.status, code: result.error?.code });
    spans.delete(task);
    task.abort = task.abort.end(ENDED, ENDED_ABORT);
    return true;
  }

  /** The effective deadline passed: timed_out, unless cancel already won (spec: tasks#deadlines). */
  deadlinePassed(task: Task): void {
    if (isTerminal(task.state) || task.state === 'cancelling') return;
    this.abortHandler(task, 'deadline', 'the deadline passed');
    this.finish(task, {
      status: 'timed_out',
      error: errorPayload('DEADLINE_EXCEEDED', 'the task did not finish before its effective deadline', {
        deadline: new Date(task.deadline).toISOString(),
      }),
    });
  }

  /** Takes a task.cancel after its snapshot reply (spec: tasks#cancellation). */
  cancel(task: Task): void {
    if (isTerminal(task.state) || task.state === 'cancelling') return;
    task.cancelRequested = true;
    this.rt.persist({ t: 'cancel', principal: task.principal, task_id: task.taskId });
    if (task.state === 'accepted') {
      this.finish(task, { status: 'cancelled' });
      return;
    }
    this.enterCancelling(task, 'cancel', 'the requester cancelled the task');
    task.releaseTimer = this.rt.clock.setTimeout(() => {
      task.releaseTimer = undefined;
      this.finish(task, { status: 'cancelled' });
    }, this.rt.settings.cancelGraceMs);
  }

  /**
   * Hands an unfinished task off at shutdown or session loss: task.handoff, then (through
   * cancelling where the table requires it) a cancelled result with `code` (spec: shutdown#handoff).
   */
  handOff(task: Task, code: 'SHUTTING_DOWN' | 'SESSION_LOST', why: string): void {
    if (isTerminal(task.state)) return;
    if (task.state === 'cancelling') {
      // The requester's cancel is already being honoured: it finishes without hand-off.
      this.abortHandler(task, code === 'SHUTTING_DOWN' ? 'shutdown' : 'session_lost', why);
      this.finish(task, { status: 'cancelled' });
      return;
    }
    const cp = task.checkpoint;
    const plan = currentPlan(task);
    const remaining = cp?.remaining_steps ?? (plan && plan.state !== 'completed' ? plan.plan.steps.map((s) => s.action) : []);
    // The question still open goes with the work (spec: shutdown#input-shutdown).
    const pending = task.state === 'input_required' ? task.inputs?.pending : undefined;
    this.emit(task, 'task.handoff', {
      ...(pending ? { input_request: pendingInput(pending) } : {}),
      checkpoint: cp?.state ?? {},
      completed_steps: cp?.completed_steps ?? [],
      remaining_steps: remaining,
      resume_hint:
        cp?.resume_hint ??
        `Send task.request for ${task.capability} again with the same input${task.effectsBegun > 0 ? '; side effects have already run, check them first' : ''}.`,
    });
    if (task.state !== 'accepted') this.enterCancelling(task, code === 'SHUTTING_DOWN' ? 'shutdown' : 'session_lost', why);
    this.finish(task, { status: 'cancelled', error: errorPayload(code, why) });
  }

  private enterCancelling(task: Task, kind: AbortKind, why: string): void {
    this.abortHandler(task, kind, why);
    withdrawPlan(this.rt, task);
    withdrawInput(task);
    this.transition(task, 'cancelling');
  }

  private abortHandler(task: Task, kind: AbortKind, why: string): void {
    if (!task.abort.aborted) task.abort.abort(new TaskAborted(kind, why));
  }
}

/**
 * An outcome as the session's version may carry it: a code of a later version than the session's
 * (CAPABILITY_FAILED in a session of 1.0, say) becomes INTERNAL_ERROR with the same retryable
 * value (spec: errors#capability-failed, versioning#tap-1-1).
 */
function inVersion(outcome: TaskOutcome, version: string | undefined): TaskOutcome {
  const since = outcome.error && errorEntry(outcome.error.code)?.since;
  const v = version === undefined ? null : parseVersion(version);
  const s = since === undefined ? null : parseVersion(since);
  if (!outcome.error || !v || !s || compareVersions(s, v) <= 0) return outcome;
  return { ...outcome, error: { ...outcome.error, code: 'INTERNAL_ERROR' } };
}

/** A retryable error made non-retryable because a side effect may not repeat (spec: idempotency#retryable-endings). */
function unrepeatable(error: ErrorPayload, task: Task): ErrorPayload {
  const details: Record<string, unknown> = { ...(error.details ?? {}), checkpoint: task.checkpoint?.state ?? {} };
  return { ...error, retryable: false, details };
}

/** What a task passes on to the tasks its handler submits: its delegation path with this agent, its trace and its span (spec: mesh#delegation). */
function scopeOf(agentId: string, task: Task): TaskScope {
  return {
    agentId,
    delegation: delegationOf(task.delegation, agentId),
    trace: task.trace,
    traceContext: traceContextOf(task.carried),
    span: spans.get(task),
  };
}
