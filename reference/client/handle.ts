/**
 * A submitted task as the caller holds it: its acceptance, its stream, its result, and the
 * requests that concern it (spec: tasks). Retries of retryable refusals and retryable endings
 * happen here, with a new task_id and the same idempotency_key (spec: tasks#retries).
 */
import type { MessageOf, PayloadOf, TapMessage } from '../../schemas/src/index.ts';
import { extended } from '../core/extended.ts';
import { isFatal } from '../core/index.ts';
import { backoffDelay, type RetryPolicy } from './backoff.ts';
import type { SubmitOptionsFor } from './submit-options.ts';
import { ClientCode, quiet, TapClientError } from './errors.ts';
import {
  acceptedOf,
  ENDINGS_NOT_RETRIED,
  pollUntilEnded,
  quietUnanswered,
  snapshotPayload,
  taskRequestFields,
  taskRequestPayload,
  type Accepted,
  type Ending,
  traceMembers,
} from './attempt.ts';
import { Feed, HANDLE_LOG_LIMIT } from './feed.ts';
import { FollowedTask } from './followed.ts';
import { answerInput, answerPlan, type Answerable } from './callbacks.ts';
import type { TaskHost } from './task-host.ts';
import type { TaskStream } from './stream.ts';
import {
  STREAM_TYPES,
  type Authorization,
  type InputRequestPayload,
  type PlanDecision,
  type PlanSubmitPayload,
  type ResultPayload,
  type SnapshotPayload,
  type StreamMessage,
} from './types.ts';

export type { Accepted } from './attempt.ts';

/** What `quietSent` holds once a quiet request went out: one settled promise shared by every handle. */
const SENT: Promise<void> = Promise.resolve();
/** What a settled handle's resolvers become: the promises they settled have settled. */
const SETTLED = (): void => {};

/** Options of `client.submit`. */
export type SubmitOptions = SubmitOptionsFor<TaskHandle>;

/** A task submitted through a client. */
export class TaskHandle extends FollowedTask {
  /** Resolves with the final task.result payload, whatever its status; rejects when no result can come. */
  readonly result: Promise<ResultPayload>;

  private stream?: TaskStream;
  private unsubscribe?: () => void;
  /** The acceptance promise, made when first asked for (most callers await only the result). */
  private acceptance?: Promise<Accepted>;
  private resolveAccepted?: (a: Accepted) => void;
  private rejectAccepted?: (e: Error) => void;
  /** What the task was accepted as, or why it never will be. */
  private acceptedAs?: Accepted;
  private unaccepted?: Error;
  private resolveResult!: (r: ResultPayload) => void;
  private rejectResult!: (e: Error) => void;
  private isAccepted = false;
  private failure?: Error;
  private cancelRequested = false;
  private attempt = 0;
  private ending?: { resolve: (e: Ending) => void; reject: (e: Error) => void };
  private readonly policy: RetryPolicy;
  /** The plans this handle has sent a decision on, made at the first decision. */
  private decided?: Set<string>;
  /** Resolves once a quiet attempt's request is sent: requests about the task may follow it (spec: tasks#quiet-requests). */
  private quietSent?: Promise<void>;

  constructor(
    private readonly host: TaskHost<TaskHandle>,
    readonly capability: string,
    readonly input: unknown,
    options: SubmitOptions = {},
  ) {
    super(new Feed<StreamMessage>(HANDLE_LOG_LIMIT));
    this.result = new Promise<ResultPayload>((resolve, reject) => {
      this.resolveResult = resolve;
      this.rejectResult = reject;
    });
    this.policy = options.retry ? extended(host.retry, options.retry) : host.retry;
    this.idempotencyKey = options.idempotencyKey ?? host.newIdempotencyKey();
    const begun = host.beginTask(capability, options, this);
    this.options = extended(options, { metadata: begun.metadata, delegation: begun.delegation });
    if (begun.refusal) this.settle(begun.refusal);
    else this.run();
  }

  /** Resolves when the agent accepted the task (or a retry got the original's snapshot); quiet: with its first message. */
  get accepted(): Promise<Accepted> {
    if (this.acceptance) return this.acceptance;
    if (this.acceptedAs) return (this.acceptance = Promise.resolve(this.acceptedAs));
    // A rejection nobody awaits never ends the process.
    if (this.unaccepted) return (this.acceptance = quiet(Promise.reject(this.unaccepted)));
    return (this.acceptance = new Promise<Accepted>((resolve, reject) => {
      this.resolveAccepted = resolve;
      this.rejectAccepted = reject;
    }));
  }

  /** The idempotency key every attempt carries. */
  readonly idempotencyKey: string;
  /** The submit options, with the metadata and path the session's version gives the task's requests. */
  private readonly options: SubmitOptions;

  /** The trace every request about the task carries: trace_id, span_id (spec: mesh#trace), and in 1.1 the trace context. */
  get trace(): { trace_id?: string; span_id?: string; traceparent?: string; tracestate?: string; baggage?: string } | undefined {
    return traceMembers(this.options.metadata);
  }

  protected followed(): TaskStream | undefined {
    return this.stream;
  }

  /** Asks the agent to cancel the task; resolves with its snapshot (the result follows on the stream). */
  async cancel(reason?: string): Promise<SnapshotPayload> {
    this.cancelRequested = true;
    await this.known();
    const reply = await this.host.request('task.cancel', reason === undefined ? {} : { reason }, { task_id: this.taskId });
    return this.snapshotOf(reply);
  }

  /** Asks the agent for the task as it stands now. */
  async status(): Promise<SnapshotPayload> {
    await this.known();
    const reply = await this.host.request('task.status', {}, { task_id: this.taskId });
    return this.snapshotOf(reply);
  }

  /** Asks the agent to re-send every message after `lastSequence` (default: the last one received); duplicates are dropped. */
  async resume(lastSequence?: number): Promise<SnapshotPayload> {
    await this.known();
    const reply = await this.host.request('task.resume', { last_sequence: lastSequence ?? this.lastSequence }, { task_id: this.taskId });
    return this.snapshotOf(reply);
  }

  /** Sends the decision on a plan (spec: plans#decision). */
  async decide(planId: string, decision: PlanDecision): Promise<SnapshotPayload> {
    const d = typeof decision === 'string' ? { decision } : decision;
    const payload: PayloadOf<'plan.decision'> = { plan_id: planId, decision: d.decision };
    if (d.feedback !== undefined) payload.feedback = d.feedback;
    (this.decided ??= new Set()).add(planId);
    const reply = await this.host.request('plan.decision', payload, { task_id: this.taskId });
    return this.snapshotOf(reply);
  }

  /**
   * TAP 1.1: answers the pending input request (or `requestId`): the snapshot before the answer took effect, or the
   * agent's error, such as INVALID_ANSWER with details.issues, after which the task still waits (spec: tasks#input-response).
   */
  async answer(answer: unknown, requestId = this.pendingInput?.request_id): Promise<SnapshotPayload> {
    await this.accepted;
    if (requestId === undefined)
      throw new TapClientError('PROTOCOL_VIOLATION', `task ${this.taskId} waits for no input; answer once the 'input' event comes`);
    const reply = await this.host.request('input.response', { request_id: requestId, answer }, { task_id: this.taskId });
    return this.snapshotOf(reply);
  }

  /** Ends the handle without a result: the session is gone, closed, or could not be resumed. */
  fail(error: Error): void {
    if (this.done) return;
    if (this.ending) {
      this.ending.reject(error);
      this.ending = undefined;
      return;
    }
    this.settle(error);
  }

  /** Until the agent knows the task: its acceptance, or for a quiet task the request sent before (spec: tasks#quiet-requests). */
  private known(): Promise<unknown> {
    return this.quietSent ?? this.accepted;
  }

  private snapshotOf(reply: TapMessage): SnapshotPayload {
    const snapshot = snapshotPayload(reply, this.taskId);
    if (snapshot.plan && this.stream && this.stream.taskId === reply.task_id)
      this.stream.plan = { plan_id: snapshot.plan.plan_id, state: String(snapshot.plan.state) };
    return snapshot;
  }

  /** Starts the next attempt: a fresh task id (the first may be given), its stream and its request (spec: tasks#retries). */
  private run(lastError?: Error): void {
    if (this.done) return;
    this.attempt++;
    if (this.attempt > 1 && this.cancelRequested)
      return this.settle(lastError ?? new TapClientError('CANCELLED', 'cancelled before a retry'));
    const taskId = this.attempt === 1 && this.options.taskId !== undefined ? this.options.taskId : this.host.newTaskId();
    this.attempts.push(taskId);
    this.attach(this.host.openStream(taskId));
    this.host.track(this, taskId);
    // Quiet only in a session of 1.1 (spec: tasks#quiet-1-0).
    const quietly = this.options.quiet === true && this.host.sessionVersion() !== '1.0';
    const attempt = this.attempt;
    const replied = (reply: TapMessage): void => {
      if (this.attempt === attempt) this.replied(reply, taskId, quietly);
    };
    const failed = (err: unknown): void => this.settle(err as Error);
    try {
      this.host.requestThen(
        'task.request',
        taskRequestPayload(this.capability, this.input, this.options, quietly),
        taskRequestFields(taskId, this.idempotencyKey, this.attempt, this.options),
        replied,
        quietly ? (err) => quietUnanswered(this.host, err, taskId).then(replied, failed) : failed,
      );
    } catch (err) {
      return failed(err);
    }
    if (quietly) this.quietSent = SENT;
  }

  /** The reply to the attempt's task.request: its acceptance, a retry's snapshot, a refusal, or for a quiet task its first stream message. */
  private replied(reply: TapMessage, taskId: string, quietly: boolean): void {
    if (this.done) return;
    if (reply.type === 'error') {
      this.host.dropStream(taskId);
      const error = TapClientError.fromPayload(reply.payload, taskId);
      if (this.mayRetry(reply.payload.retryable) && !isFatal(reply.payload)) return this.retryAfterBackoff(error);
      return this.settle(error);
    }
    if (reply.type === 'task.snapshot') {
      this.adopt(reply, taskId).then(
        (known) => (known ? this.ended({ result: known, retry: this.retriesAdopted(known) }) : this.waitForEnd()),
        (err: unknown) => this.settle(err as Error),
      );
    } else if (reply.type === 'task.accepted') {
      this.markAccepted(reply);
      this.waitForEnd();
    } else if (quietly && reply.task_id === taskId && STREAM_TYPES.has(reply.type)) {
      // A quiet task answers with its first stream message, often its result (spec: tasks#quiet-tasks).
      this.accept({ taskId, capability: this.capability });
      this.waitForEnd();
    } else {
      this.settle(new TapClientError('PROTOCOL_VIOLATION', `task.request was answered with ${reply.type}`));
    }
  }

  /** The attempt's task ended: the handle settles with its result, or a retryable ending starts the next attempt. */
  private ended(ending: Ending): void {
    if (!ending.retry) return this.settle(undefined, ending.result);
    this.retryAfterBackoff(TapClientError.fromPayload(ending.result.error!, this.taskId));
  }

  private retryAfterBackoff(error: Error): void {
    this.backoff().then(
      () => this.run(error),
      (err: unknown) => this.settle(err as Error),
    );
  }

  /**
   * A retry answered with the original task's snapshot: follow that task, fetching the part of its stream this client
   * has not seen (spec: tasks#idempotency). Returns the snapshot's result when the stream can no longer be replayed.
   */
  private async adopt(reply: MessageOf<'task.snapshot'>, requestedId: string): Promise<ResultPayload | undefined> {
    const originalId = reply.task_id ?? requestedId;
    if (originalId !== requestedId) {
      this.host.dropStream(requestedId);
      this.attach(this.host.openStream(originalId));
      this.host.track(this, originalId);
    }
    this.accept(acceptedOf(reply, originalId));
    const stream = this.stream!;
    if (stream.ended) return undefined;
    const resumed = await this.host.request('task.resume', { last_sequence: stream.lastSequence }, { task_id: originalId });
    if (resumed.type !== 'error') return undefined;
    if (reply.payload.result) return reply.payload.result;
    // Another session of this principal keeps the task's stream: follow it by status (spec: resume#attachment).
    if (resumed.payload.code === 'PROTOCOL_VIOLATION') return pollUntilEnded(this.host, originalId);
    throw TapClientError.fromPayload(resumed.payload, originalId);
  }

  private markAccepted(msg: MessageOf<'task.accepted'>): void {
    if (!this.isAccepted) this.accept(acceptedOf(msg, this.taskId));
  }

  /** The task is accepted (the first acceptance counts). */
  private accept(accepted: Accepted): void {
    this.isAccepted = true;
    if (this.acceptedAs) return;
    this.acceptedAs = accepted;
    this.resolveAccepted?.(accepted);
  }

  /** A retryable ending of a task another session created (e.g. SESSION_LOST) starts a new task under the same key (spec: idempotency#retryable-endings). */
  private retriesAdopted(result: ResultPayload): boolean {
    return result.status !== 'completed' && result.error !== undefined && this.mayRetry(result.error.retryable);
  }

  private mayRetry(retryable: boolean): boolean {
    return retryable && this.attempt < this.policy.attempts && !this.cancelRequested && !this.host.ending();
  }

  private backoff(): Promise<void> {
    return this.host.sleep(backoffDelay(this.attempt, this.policy));
  }

  /** Takes the attempt's task.result when it comes (or is in already), or the handle's failure meanwhile. */
  private waitForEnd(): void {
    if (this.done) return;
    this.ending = { resolve: (e) => this.ended(e), reject: (err) => this.settle(err) };
    const stream = this.stream;
    // The result may be in already: it can arrive before the request's reply is processed.
    if (stream?.result) this.onMessage(stream.log[stream.log.length - 1]!, stream);
  }

  /** Follows a stream: copies what it already holds, then takes each new message. */
  private attach(stream: TaskStream): void {
    this.unsubscribe?.();
    this.stream = stream;
    for (const m of stream.log) this.push(m);
    this.unsubscribe = stream.subscribe((m) => this.onMessage(m, stream));
  }

  private onMessage(msg: StreamMessage, stream: TaskStream): void {
    if (stream !== this.stream || this.done) return;
    switch (msg.type) {
      case 'task.accepted':
        this.push(msg);
        this.markAccepted(msg);
        return;
      case 'plan.submit':
        this.push(msg);
        answerPlan(this.answerable(), msg.payload, this.options.onPlan);
        return;
      case 'input.request':
        this.push(msg);
        answerInput(this.answerable(), msg.payload, this.options.onInput);
        return;
      case 'task.result': {
        if (!this.ending) return;
        const error = msg.payload.error;
        // An ending by the agent's shutdown or a lost session is not retried here: the hand-off, or
        // another session, is where that work continues (spec: shutdown#handoff).
        const retry =
          msg.payload.status !== 'completed' &&
          error !== undefined &&
          stream.handoff === undefined &&
          !ENDINGS_NOT_RETRIED.has(error.code) &&
          this.mayRetry(error.retryable);
        if (!retry) this.push(msg);
        const e = this.ending;
        this.ending = undefined;
        e.resolve({ result: msg.payload, retry });
        return;
      }
      default:
        this.push(msg);
    }
  }

  /** What the plan and input answerers need of this handle (./callbacks.ts). */
  private answerable(): Answerable<TaskHandle> {
    return {
      self: this,
      taskId: this.taskId,
      host: this.host,
      settled: (planId) => this.done || (planId !== undefined && this.decided?.has(planId) === true),
      decide: (planId, decision) => this.decide(planId, decision),
      answer: (value, requestId) => this.answer(value, requestId),
    };
  }

  private push(msg: StreamMessage): void {
    this.feed.push(msg);
  }

  private settle(error?: Error, result?: ResultPayload): void {
    if (this.done) return;
    this.done = true;
    this.unsubscribe?.();
    this.host.ended(this, error, result);
    // A rejection nobody awaits never ends the process: each promise is marked handled as it is rejected, not when made (most never are).
    if (!this.isAccepted) {
      this.unaccepted = error ?? new TapClientError(ClientCode.CLOSED, 'the task ended before it was accepted');
      if (this.acceptance) quiet(this.acceptance);
      this.rejectAccepted?.(this.unaccepted);
    }
    if (error) {
      this.failure = error;
      quiet(this.result);
      this.rejectResult(error);
      this.feed.fail(error);
    } else {
      this.resolveResult(result!);
      this.feed.end();
    }
    // A client keeps its newest ended handles (ENDED_TASKS_KEPT): they keep nothing they no longer use.
    this.unsubscribe = undefined;
    this.resolveAccepted = this.resolveResult = this.rejectAccepted = this.rejectResult = SETTLED;
  }
}
