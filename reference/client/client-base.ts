/**
 * The state of a requester client and what works on it alone: the services its task handles use
 * (ids, streams, requests, timers), the handling of every incoming message, and the endings
 * (spec: tasks#sequence, messages#replies, shutdown#farewell). TapClient adds sessions on top.
 */
import type { MessageOf, MessageType, PayloadOf, TapMessage } from '../../schemas/src/index.ts';
import { assertKey, errorPayload, isFatal, parseKey, pooled, replyTypes, type RandomSource } from '../core/index.ts';
import { extended } from '../core/extended.ts';
import { randomBytes } from '../crypto.ts';
import type { TapSpan, Telemetry } from '../telemetry.ts';
import type { Transport } from '../transports/index.ts';
import { retryPolicy, type RetryPolicy } from './backoff.ts';
import { Emitter } from './emitter.ts';
import { ClientCode, quiet, TapClientError } from './errors.ts';
import type { TaskHandle } from './handle.ts';
import { beginTask } from './task-trace.ts';
import { inputRefusal } from './input-check.ts';
import type { BegunTask, NewTask, TaskHost } from './task-host.ts';
import { requesterCard, type ClientEvents, type ClientProblem, type ConnectOptions, type ReconnectPolicy } from './options.ts';
import { PendingRequests, type Pending } from './pending.ts';
import { SeenIds } from './seen.ts';
import { TaskTable } from './tasks.ts';
import type { RequesterSession, EnvelopeFields, HandshakeResult } from './session.ts';
import type { TaskStream } from './stream.ts';
import { wantTaskScopes } from '../task-scope.ts';
import {
  STREAM_TYPES,
  systemClock,
  type AgentCard,
  type Clock,
  type ErrorPayload,
  type Logger,
  type PlanSubmitPayload,
  type InputRequestPayload,
  type StreamMessage,
} from './types.ts';

export type Phase = 'connecting' | 'open' | 'reconnecting' | 'ending' | 'closed';

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** The state a requester client keeps across its sessions, and the handling of what arrives. */
export abstract class ClientBase extends Emitter<ClientEvents> implements TaskHost<TaskHandle> {
  readonly agentId: string;
  readonly retry: RetryPolicy;
  readonly logger?: Logger;
  protected readonly clock: Clock;
  protected readonly card: AgentCard;
  protected readonly random: RandomSource;
  protected readonly integrity?: { keyId: string; key: Uint8Array };
  protected readonly reconnectPolicy: ReconnectPolicy | null;
  protected session!: RequesterSession;
  protected hs!: HandshakeResult;
  protected phase: Phase = 'connecting';
  protected readonly tasks: TaskTable;
  protected readonly pending: PendingRequests;
  protected readonly gapResumes = new Set<string>();
  /** Quiet requests by task id: settled by a direct reply or by the task's first stream message (spec: tasks#quiet-requests). */
  protected readonly quietWaits = new Map<string, string>();
  protected readonly seen = new SeenIds();
  protected farewellReason?: string;
  protected endWaiters: Array<() => void> = [];
  protected closing?: Promise<void>;
  /** OpenTelemetry, when the options ask for it; loaded by `open`. */
  protected telemetry?: Telemetry;
  /** The span of each open task handle, when the client traces. */
  private spans?: WeakMap<TaskHandle, TapSpan>;

  /** Use `connect` or `connectWs`. */
  constructor(
    protected readonly options: ConnectOptions,
    protected readonly factory?: () => Promise<Transport>,
    reconnect?: Partial<ReconnectPolicy> | false,
  ) {
    super();
    this.card = requesterCard(options);
    // What this client submits from a handler continues the handler's task (spec: mesh#delegation).
    wantTaskScopes('a TAP client');
    this.agentId = options.agentId;
    this.clock = options.clock ?? systemClock;
    if (options.logger) this.logger = options.logger;
    this.retry = retryPolicy(options.retry);
    this.random = options.random ?? pooled(randomBytes);
    this.tasks = new TaskTable(this.random);
    this.pending = new PendingRequests(this.clock, () => this.hs?.params.request_timeout_ms ?? DEFAULT_REQUEST_TIMEOUT_MS);
    if (options.keys) {
      const key = typeof options.keys.key === 'string' ? parseKey(options.keys.key) : options.keys.key;
      assertKey(key);
      this.integrity = { keyId: options.keys.keyId, key };
    }
    this.reconnectPolicy =
      factory && reconnect !== false ? { attempts: 8, baseMs: 200, maxMs: 5000, random: Math.random, ...reconnect } : null;
  }

  // ---- TaskHost: what handles use ----

  /** A fresh task id. */
  newTaskId(): string {
    return this.tasks.newTaskId();
  }

  /** A fresh idempotency key. */
  newIdempotencyKey(): string {
    return this.tasks.newIdempotencyKey();
  }

  ended(handle: TaskHandle, error: Error | undefined, result: { status: string; error?: { code: string } } | undefined): void {
    const span = this.spans?.get(handle);
    if (!span) return;
    this.spans!.delete(handle);
    span.end(
      error
        ? { outcome: 'failed', code: (error as { code?: string }).code ?? 'CLOSED' }
        : { outcome: result!.status, code: result!.error?.code },
    );
  }

  beginTask(capability: string, given: NewTask, handle: TaskHandle): BegunTask {
    const { span, ...begun } = beginTask({ hs: this.hs, telemetry: this.telemetry, random: this.random }, capability, given);
    if (span) (this.spans ??= new WeakMap()).set(handle, span);
    // An input that is not I-JSON would be refused by the agent: refused here, and nothing is sent (TAP-ENV-002).
    begun.refusal ??= inputRefusal(capability, handle.input);
    return begun;
  }

  /** The stream of a task id, created when new. */
  openStream(taskId: string): TaskStream {
    return this.tasks.open(taskId);
  }

  /** Forgets a stream no task stands behind (a refused request). */
  dropStream(taskId: string): void {
    this.tasks.drop(taskId);
  }

  /** Remembers which handle follows a task id. */
  track(handle: TaskHandle, taskId: string): void {
    this.tasks.track(handle, taskId);
    // Each attempt of a traced task names its task id on the span.
    this.spans?.get(handle)?.setAttributes({ 'tap.task_id': taskId, 'tap.attempt': handle.attempts.length });
  }

  /** Waits, by the client's clock. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.clock.setTimeout(resolve, ms));
  }

  /** The version the session speaks ("1.0" before the handshake). */
  sessionVersion(): string {
    return this.hs?.version ?? '1.0';
  }

  /** True once the session is ending: handles stop retrying. */
  ending(): boolean {
    return this.phase === 'ending' || this.phase === 'closed' || this.farewellReason !== undefined;
  }

  /** A plan waits and its task has no callback: tells the listeners; false when there are none. */
  planSubmitted(handle: TaskHandle, plan: PlanSubmitPayload): boolean {
    return this.emit('plan', { handle, taskId: handle.taskId, plan });
  }

  /** A task asks for input and has no callback: tells the listeners; false when there are none (spec: tasks#input-required). */
  inputRequested(handle: TaskHandle, request: InputRequestPayload): boolean {
    return this.emit('input', { handle, taskId: handle.taskId, request });
  }

  /**
   * Sends a request and resolves with its direct reply (spec: messages#replies). Rejects with
   * REQUEST_TIMEOUT (indeterminate) after request_timeout_ms, or when the client closes.
   */
  request<T extends MessageType>(type: T, payload: PayloadOf<T>, fields: EnvelopeFields): Promise<TapMessage>;
  request(type: MessageType, payload: object, fields: Record<string, unknown>): Promise<TapMessage>;
  request(type: MessageType, payload: object, fields: Record<string, unknown>): Promise<TapMessage> {
    return quiet(new Promise<TapMessage>((resolve, reject) => this.requestThen(type, payload, fields, resolve, reject)));
  }

  /**
   * As `request`, with the reply or the failure handed to `onReply` or `onError` (once, never
   * within this call) and no promise made: a task's own requests take this path.
   */
  requestThen(
    type: MessageType,
    payload: object,
    fields: Record<string, unknown>,
    onReply: (reply: TapMessage) => void,
    onError: (err: Error) => void,
  ): void {
    const failed = (err: Error): void => queueMicrotask(() => onError(err));
    if (this.phase === 'closed' || this.phase === 'connecting') {
      return failed(new TapClientError(ClientCode.CLOSED, `cannot send ${type}: the client is ${this.phase}`, { unsent: true }));
    }
    // A request about a task carries the task's trace (spec: mesh#trace).
    const trace =
      fields.metadata === undefined && typeof fields.task_id === 'string' ? this.tasks.handle(fields.task_id)?.trace : undefined;
    if (trace) fields = extended(fields, { metadata: trace });
    // A quiet request has no direct reply once its task exists: the task's first stream message answers it (spec: tasks#quiet-requests).
    if (type === 'task.request' && (payload as { quiet?: unknown }).quiet === true && typeof fields.task_id === 'string') {
      this.tasks.open(fields.task_id).markQuiet();
    }
    // While the session is down (reconnecting, or ending after it closed) the request waits for a resume's re-send.
    const sent = this.session.open;
    let msg: TapMessage;
    try {
      msg = this.session.send(type, payload as PayloadOf<typeof type>, fields as EnvelopeFields) as TapMessage;
    } catch (err) {
      return failed(err as Error);
    }
    if (type === 'task.request' && (payload as { quiet?: unknown }).quiet === true) this.quietWaits.set(msg.task_id!, msg.message_id);
    this.pending.expect(msg, sent, onReply, onError);
  }

  // ---- incoming ----

  protected dispatch(msg: TapMessage): void {
    if (STREAM_TYPES.has(msg.type)) {
      this.ingest(msg as StreamMessage);
      if (this.quietWaits.size > 0) this.quietAnswered(msg);
    }
    const p = this.pending.take(msg.reply_to);
    if (p && p.msg.type === 'task.request') this.quietWaits.delete(p.msg.task_id!);
    if (p) {
      this.settle(p, msg);
      return;
    }
    switch (msg.type) {
      case 'session.farewell':
        this.farewell(msg.payload.reason);
        return;
      case 'error':
        this.unsolicitedError(msg);
        return;
      case 'task.snapshot':
      case 'shutdown.response':
        this.session.answer(
          errorPayload('PROTOCOL_VIOLATION', `${msg.type} answers ${msg.reply_to}, which is no pending request`),
          msg.message_id,
          msg.task_id,
        );
        this.problem(errorPayload('PROTOCOL_VIOLATION', `unsolicited ${msg.type}`));
        return;
      default:
        return;
    }
  }

  /** The first stream message of a quiet task settles its request (spec: tasks#quiet-requests). */
  private quietAnswered(msg: TapMessage): void {
    const requestId = this.quietWaits.get(msg.task_id!);
    if (requestId === undefined) return;
    this.quietWaits.delete(msg.task_id!);
    this.pending.take(requestId)?.resolve(msg);
  }

  /** One sequenced message: into its task's stream, in order and once (spec: tasks#sequence). */
  protected ingest(msg: StreamMessage): void {
    const taskId = msg.task_id!;
    const out = this.tasks.ingest(msg);
    if (!out) {
      this.session.answer(errorPayload('UNKNOWN_TASK', `this requester has no task ${taskId}`), msg.message_id, taskId);
      this.problem(errorPayload('UNKNOWN_TASK', `${msg.type} for unknown task ${taskId}`));
      return;
    }
    if (out.kind === 'gap' && !this.gapResumes.has(taskId)) {
      // Something was lost: ask for everything after the last in-order message (spec: resume#task-resume).
      this.gapResumes.add(taskId);
      this.request('task.resume', { last_sequence: out.expected - 1 }, { task_id: taskId })
        .catch(() => undefined)
        .finally(() => this.gapResumes.delete(taskId));
    } else if (out.kind === 'delivered') {
      for (const m of out.delivered) {
        if (m.type === 'task.handoff') this.emit('handoff', { taskId, handoff: m.payload });
      }
    }
  }

  protected settle(p: Pending, reply: TapMessage): void {
    const expected = replyTypes(p.msg.type);
    if (!expected.includes(reply.type)) {
      p.reject(new TapClientError('PROTOCOL_VIOLATION', `${p.msg.type} was answered with ${reply.type}`));
      return;
    }
    if (p.resent && p.msg.type === 'task.request' && reply.type === 'task.accepted') {
      // The original reply to a request re-sent after a resume: fetch what followed it.
      const stream = this.tasks.stream(reply.task_id!);
      if (stream && !stream.ended)
        void this.request('task.resume', { last_sequence: stream.lastSequence }, { task_id: stream.taskId }).catch(() => undefined);
    }
    p.resolve(reply);
  }

  protected unsolicitedError(msg: MessageOf<'error'>): void {
    const taskId = msg.task_id;
    const handle = taskId !== undefined ? this.tasks.handle(taskId) : undefined;
    // After a resume, a task the agent cannot replay, or no longer knows, has no outcome to wait for (spec: resume#reconnect).
    if (handle && (msg.payload.code === 'RESUME_UNAVAILABLE' || msg.payload.code === 'UNKNOWN_TASK')) {
      const error = TapClientError.fromPayload(msg.payload, taskId);
      handle.fail(
        new TapClientError(error.code, `${error.message}; the task's outcome is unknown`, {
          payload: msg.payload,
          indeterminate: true,
          taskId: taskId!,
        }),
      );
    }
    this.problem(msg.payload);
    if (isFatal(msg.payload)) this.logger?.('warn', 'the agent reported a fatal error', { code: msg.payload.code });
  }

  protected farewell(reason: string): void {
    this.farewellReason = reason;
    this.emit('farewell', { reason });
    for (const fn of this.endWaiters.splice(0)) fn();
    if (this.phase === 'open') {
      // The agent ends the session: close our end, and fail what is still open.
      this.phase = 'ending';
      void this.session
        .close({ code: 1000, reason: 'farewell' })
        .then(() => this.finish(new TapClientError('SESSION_LOST', `the agent ended the session: ${reason}`)));
    }
  }

  protected problem(error: ErrorPayload, text?: string, taskId?: string): void {
    const problem: ClientProblem = { error };
    if (text !== undefined) problem.text = text;
    if (!this.emit('error', problem)) this.logger?.('warn', 'problem', { code: error.code, message: error.message });
    // A message of an open task that its schema refuses breaks the task's stream for good: a resume
    // replays it byte for byte. The task ends here rather than wait for what cannot come.
    const handle = error.code === 'INVALID_MESSAGE' && taskId !== undefined ? this.tasks.handle(taskId) : undefined;
    if (handle) {
      handle.fail(
        new TapClientError(
          'INVALID_MESSAGE',
          `the agent sent a message for task ${taskId} that its schema refuses (${error.message}); the task's outcome is unknown`,
          {
            payload: error,
            indeterminate: true,
            taskId,
          },
        ),
      );
    }
  }

  // ---- endings ----

  /** Resolves when the agent says farewell or the transport closes, or after `ms`. */
  protected untilEnded(ms: number): Promise<void> {
    if (this.farewellReason !== undefined || !this.session.open) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = this.clock.setTimeout(resolve, ms);
      this.endWaiters.push(() => {
        this.clock.clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Rejects every pending request and fails every open handle with `error` (a declined resume); a task whose request never went out fails as unsent. */
  protected failOpen(error: TapClientError): void {
    const unsent = this.pending.rejectAll(error);
    this.tasks.failOpen(error, (taskId) => unsent.get(taskId));
  }

  /** Closes the client for good. */
  protected finish(error: TapClientError): void {
    if (this.phase === 'closed') return;
    this.phase = 'closed';
    this.failOpen(error);
    for (const fn of this.endWaiters.splice(0)) fn();
    this.emit('closed', { reason: error.message });
  }
}
