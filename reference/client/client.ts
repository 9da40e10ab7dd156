/**
 * The TAP requester client: opens a session, submits tasks and follows them to their end,
 * answers plans, asks for status, cancels, shuts an agent down, and (given a way to reconnect)
 * resumes a lost session without losing or repeating a message (spec: tasks, resume, shutdown).
 */
import type { MessageOf, MessageType, PayloadOf, TapMessage } from '../../schemas/src/index.ts';
import { assertKey, errorPayload, isFatal, parseKey, replyTypes, type RandomSource } from '../core/index.ts';
import { hmacSha256, randomBytes } from '../crypto.ts';
import type { Transport } from '../transports/index.ts';
import { snapshotPayload } from './attempt.ts';
import { backoffDelay, retryPolicy, type RetryPolicy } from './backoff.ts';
import { Emitter } from './emitter.ts';
import { ClientCode, TapClientError } from './errors.ts';
import { TaskHandle, type SubmitOptions } from './handle.ts';
import type { TaskHost } from './task-host.ts';
import {
  defaultCard,
  type ClientEvents,
  type ClientProblem,
  type ConnectOptions,
  type ReconnectPolicy,
  type ShutdownOutcome,
} from './options.ts';
import { PendingRequests, type Pending } from './pending.ts';
import { SeenIds } from './seen.ts';
import { TaskTable } from './tasks.ts';
import { RequesterSession, type EnvelopeFields, type HandshakeResult, type ResumeRequest } from './session.ts';
import type { TaskStream } from './stream.ts';
import {
  STREAM_TYPES,
  systemClock,
  type AgentCard,
  type Clock,
  type ErrorPayload,
  type Logger,
  type PlanSubmitPayload,
  type ProposedParams,
  type SnapshotPayload,
  type StreamMessage,
} from './types.ts';

type Phase = 'connecting' | 'open' | 'reconnecting' | 'ending' | 'closed';

const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** A requester's side of one TAP session (across reconnects, when it has a transport factory). */
export class TapClient extends Emitter<ClientEvents> implements TaskHost<TaskHandle> {
  readonly agentId: string;
  readonly retry: RetryPolicy;
  readonly logger?: Logger;
  private readonly clock: Clock;
  private readonly card: AgentCard;
  private readonly random: RandomSource;
  private readonly integrity?: { keyId: string; key: Uint8Array };
  private readonly reconnectPolicy: ReconnectPolicy | null;
  private session!: RequesterSession;
  private hs!: HandshakeResult;
  private phase: Phase = 'connecting';
  private readonly tasks: TaskTable;
  private readonly pending: PendingRequests;
  private readonly gapResumes = new Set<string>();
  private readonly seen = new SeenIds();
  private farewellReason?: string;
  private endWaiters: Array<() => void> = [];
  private closing?: Promise<void>;

  /** Use `connect` or `connectWs`. */
  constructor(
    private readonly options: ConnectOptions,
    private readonly factory?: () => Promise<Transport>,
    reconnect?: Partial<ReconnectPolicy> | false,
  ) {
    super();
    this.agentId = options.agentId;
    this.clock = options.clock ?? systemClock;
    if (options.logger) this.logger = options.logger;
    this.retry = retryPolicy(options.retry);
    this.random = options.random ?? randomBytes;
    this.tasks = new TaskTable(this.random);
    this.pending = new PendingRequests(this.clock, () => this.hs?.params.request_timeout_ms ?? DEFAULT_REQUEST_TIMEOUT_MS);
    this.card = options.card ?? defaultCard(options.agentId, options.params?.max_message_bytes);
    if (this.card.agent_id !== options.agentId) throw new TypeError(`the card names ${this.card.agent_id}, not agentId ${options.agentId}`);
    if (options.keys) {
      const key = typeof options.keys.key === 'string' ? parseKey(options.keys.key) : options.keys.key;
      assertKey(key);
      this.integrity = { keyId: options.keys.keyId, key };
    }
    this.reconnectPolicy =
      factory && reconnect !== false ? { attempts: 8, baseMs: 200, maxMs: 5000, random: Math.random, ...reconnect } : null;
  }

  /** What the handshake fixed: session id, the agent's card, granted and missing capabilities, final params. */
  get handshake(): HandshakeResult {
    return this.hs;
  }

  /** The agent's card. */
  get agent(): AgentCard {
    return this.hs.agent;
  }

  /** The final session params. */
  get params(): HandshakeResult['params'] {
    return this.hs.params;
  }

  /** True while tasks can be submitted. */
  get isOpen(): boolean {
    return this.phase === 'open' || this.phase === 'reconnecting';
  }

  /** Opens the first session on `transport`. */
  async open(transport: Transport): Promise<this> {
    const session = this.makeSession(transport, undefined);
    this.session = session;
    try {
      await session.start();
    } catch (err) {
      this.phase = 'closed';
      throw err;
    }
    if (this.hs.missing.length > 0 && !this.options.allowMissing) {
      const missing = this.hs.missing.join(', ');
      await this.close(`the agent lacks ${missing}`);
      throw new TapClientError('CAPABILITY_NOT_SUPPORTED', `the agent ${this.hs.agentId} lacks the required capabilities: ${missing}`);
    }
    return this;
  }

  /** Submits a task; the handle follows it to its result (spec: tasks#request). */
  submit(capability: string, input: unknown, options: SubmitOptions = {}): TaskHandle {
    return new TaskHandle(this, capability, input, options);
  }

  /** The handle following a task id, if this client submitted it. */
  task(taskId: string): TaskHandle | undefined {
    return this.tasks.handle(taskId);
  }

  /** Asks for a task's snapshot (spec: tasks#status). */
  async status(taskId: string): Promise<SnapshotPayload> {
    return snapshotPayload(await this.request('task.status', {}, { task_id: taskId }), taskId);
  }

  /** Asks the agent to cancel a task; resolves with its snapshot (spec: tasks#cancellation). */
  async cancel(taskId: string, reason?: string): Promise<SnapshotPayload> {
    return snapshotPayload(await this.request('task.cancel', reason === undefined ? {} : { reason }, { task_id: taskId }), taskId);
  }

  /**
   * Asks the agent to end this session: shutdown.request → shutdown.response, then the agent's
   * hand-offs and results, then its farewell (spec: shutdown). Closes the client afterwards when
   * the agent approved.
   */
  async shutdownAgent(options: { reason: string; graceMs: number }): Promise<ShutdownOutcome> {
    const handoffs: ShutdownOutcome['handoffs'] = [];
    const off = this.on('handoff', (h) => handoffs.push(h));
    try {
      const reply = await this.request('shutdown.request', { reason: options.reason, grace_ms: options.graceMs }, {});
      if (reply.type === 'error') throw TapClientError.fromPayload(reply.payload);
      if (reply.type !== 'shutdown.response')
        throw new TapClientError('PROTOCOL_VIOLATION', `shutdown.request was answered with ${reply.type}`);
      if (!reply.payload.approve) {
        const out: ShutdownOutcome = { approved: false, handoffs };
        if (reply.payload.reason !== undefined) out.reason = reply.payload.reason;
        return out;
      }
      if (this.phase === 'open') this.phase = 'ending';
      await this.untilEnded(options.graceMs + 2000);
      const out: ShutdownOutcome = { approved: true, handoffs };
      if (this.farewellReason !== undefined) out.farewell = this.farewellReason;
      await this.session.close({ code: 1000, reason: 'agent shut down' });
      this.finish(
        new TapClientError('SHUTTING_DOWN', `the agent shut the session down${this.farewellReason ? `: ${this.farewellReason}` : ''}`),
      );
      return out;
    } finally {
      off();
    }
  }

  /**
   * Ends the session: sends session.farewell, waits (up to closeWaitMs) for the agent to end its
   * tasks and say its own farewell, then closes the transport. Handles still open are failed.
   */
  close(reason = 'requester done'): Promise<void> {
    this.closing ??= (async () => {
      if (this.phase === 'closed') return;
      const wasReconnecting = this.phase === 'reconnecting';
      this.phase = 'ending';
      if (!wasReconnecting && this.session.open && this.farewellReason === undefined) {
        try {
          this.session.send('session.farewell', { reason });
          await this.untilEnded(this.options.closeWaitMs ?? 5000);
        } catch {
          // Nothing more to say on a session that is going.
        }
      }
      await this.session.close({ code: 1000, reason: 'farewell' });
      this.finish(new TapClientError(ClientCode.CLOSED, `the client was closed (${reason})`));
    })();
    return this.closing;
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
  }

  /** Waits, by the client's clock. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.clock.setTimeout(resolve, ms));
  }

  /** True once the session is ending: handles stop retrying. */
  ending(): boolean {
    return this.phase === 'ending' || this.phase === 'closed' || this.farewellReason !== undefined;
  }

  /** A plan waits and its task has no callback: tells the listeners; false when there are none. */
  planSubmitted(handle: TaskHandle, plan: PlanSubmitPayload): boolean {
    return this.emit('plan', { handle, taskId: handle.taskId, plan });
  }

  /**
   * Sends a request and resolves with its direct reply (spec: messages#replies). Rejects with
   * REQUEST_TIMEOUT (indeterminate) after request_timeout_ms, or when the client closes.
   */
  request<T extends MessageType>(type: T, payload: PayloadOf<T>, fields: EnvelopeFields): Promise<TapMessage>;
  request(type: MessageType, payload: object, fields: Record<string, unknown>): Promise<TapMessage>;
  request(type: MessageType, payload: object, fields: Record<string, unknown>): Promise<TapMessage> {
    if (this.phase === 'closed' || this.phase === 'connecting') {
      return Promise.reject(new TapClientError(ClientCode.CLOSED, `cannot send ${type}: the client is ${this.phase}`));
    }
    let msg: TapMessage;
    try {
      msg = this.session.send(type, payload as PayloadOf<typeof type>, fields as EnvelopeFields) as TapMessage;
    } catch (err) {
      return Promise.reject(err);
    }
    return this.pending.add(msg);
  }

  // ---- sessions ----

  private makeSession(transport: Transport, resume: ResumeRequest | undefined): RequesterSession {
    const o = this.options;
    const params: ProposedParams = { request_timeout_ms: DEFAULT_REQUEST_TIMEOUT_MS, ...o.params };
    const session: RequesterSession = new RequesterSession(
      transport,
      {
        card: this.card,
        versions: o.versions ?? ['1.0'],
        requires: o.requires ?? [],
        params,
        hmac: hmacSha256,
        random: this.random,
        handshakeTimeoutMs: o.handshakeTimeoutMs ?? 10_000,
        clock: this.clock,
        seen: this.seen,
        follows: (taskId) => this.tasks.follows(taskId),
        ...(o.credentials ? { credentials: o.credentials } : {}),
        ...(this.integrity ? { integrity: this.integrity } : {}),
        ...(o.target !== undefined ? { target: o.target } : this.hs ? { target: this.hs.agentId } : {}),
        ...(resume ? { resume } : {}),
        ...(o.logger ? { logger: o.logger } : {}),
        ...(o.trace ? { trace: o.trace } : {}),
      },
      {
        opened: (hs) => this.opened(session, hs, resume),
        message: (msg) => this.dispatch(msg),
        problem: (error, text) => this.problem(error, text),
        closed: (_info, lost) => this.sessionClosed(session, lost),
      },
    );
    return session;
  }

  /** A session reached handshake.go: adopt it, and on a resume re-send what was unanswered. */
  private opened(session: RequesterSession, hs: HandshakeResult, resume: ResumeRequest | undefined): void {
    if (this.phase === 'ending' || this.phase === 'closed') {
      // The client was closed while this reconnect was under way.
      void session.close({ code: 1000, reason: 'client closed' });
      return;
    }
    const previous = this.hs;
    this.session = session;
    this.hs = hs;
    if (this.phase === 'connecting') {
      this.phase = 'open';
      return;
    }
    const resumed = resume !== undefined && hs.resumed && hs.sessionId === previous?.sessionId;
    if (resumed) {
      // Re-sent byte for byte: a request the agent saw gets its original reply (spec: sessions#duplicates).
      this.pending.resendAll((msg) => session.resend(msg));
    } else {
      this.seen.clear();
      this.failOpen(
        new TapClientError(
          'RESUME_UNAVAILABLE',
          `the agent did not resume session ${previous?.sessionId ?? '?'} (new session ${hs.sessionId}); the outcome of the open tasks is unknown`,
          { indeterminate: true },
        ),
      );
    }
    if (this.phase === 'reconnecting') this.phase = 'open';
    this.emit('reconnected', { resumed, sessionId: hs.sessionId });
  }

  private sessionClosed(session: RequesterSession, lost: boolean): void {
    if (session !== this.session) return;
    for (const fn of this.endWaiters.splice(0)) fn();
    const mayReconnect = lost && this.reconnectPolicy && this.phase === 'open' && this.farewellReason === undefined;
    if (mayReconnect) {
      void this.reconnect();
      return;
    }
    if (this.phase === 'ending' || this.phase === 'closed') return;
    const error =
      this.farewellReason !== undefined
        ? new TapClientError('SESSION_LOST', `the agent ended the session: ${this.farewellReason}`)
        : new TapClientError('SESSION_LOST', 'the transport to the agent was lost; the outcome of the open tasks is unknown', {
            retryable: true,
            indeterminate: true,
          });
    this.finish(error);
  }

  /** Reconnects with backoff and asks to resume the session with each task's last sequence (spec: sessions#resume). */
  private async reconnect(): Promise<void> {
    const policy = this.reconnectPolicy!;
    this.phase = 'reconnecting';
    this.emit('lost', { reason: 'transport lost' });
    const previous = this.hs;
    const lostAt = this.clock.now();
    let resume = true;
    for (let attempt = 1; attempt <= policy.attempts; attempt++) {
      await this.sleep(backoffDelay(attempt, policy));
      if (this.phase !== 'reconnecting') return;
      if (resume && this.clock.now() - lostAt > previous.resumeWindowMs) {
        resume = false;
        this.failOpen(
          new TapClientError('SESSION_LOST', `the resume window of ${previous.resumeWindowMs} ms passed`, {
            indeterminate: true,
            retryable: true,
          }),
        );
      }
      let session: RequesterSession | undefined;
      try {
        const transport = await this.factory!();
        if (this.phase !== 'reconnecting') {
          await transport.close({ code: 1000, reason: 'client closed' });
          return;
        }
        session = this.makeSession(transport, resume ? this.resumeRequest(previous) : undefined);
        await session.start();
        return;
      } catch (err) {
        const code = (err as TapClientError).code;
        this.logger?.('warn', 'reconnect failed', { attempt, error: (err as Error).message });
        if (code === 'RESUME_UNAVAILABLE' && resume) {
          resume = false;
          this.failOpen(err as TapClientError);
        } else if (code === 'UNSUPPORTED_VERSION' || code === 'AUTH_REQUIRED' || code === 'IDENTITY_MISMATCH') {
          break;
        }
      }
    }
    if (this.phase === 'reconnecting') {
      this.finish(
        new TapClientError('SESSION_LOST', `could not reconnect after ${policy.attempts} attempts`, {
          indeterminate: true,
          retryable: true,
        }),
      );
    }
  }

  private resumeRequest(previous: HandshakeResult): ResumeRequest {
    return { session_id: previous.sessionId, resume_token: previous.resumeToken, tasks: this.tasks.resumeList() };
  }

  // ---- incoming ----

  private dispatch(msg: TapMessage): void {
    if (STREAM_TYPES.has(msg.type)) this.ingest(msg as StreamMessage);
    const p = this.pending.take(msg.reply_to);
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

  /** One sequenced message: into its task's stream, in order and once (spec: tasks#sequence). */
  private ingest(msg: StreamMessage): void {
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

  private settle(p: Pending, reply: TapMessage): void {
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

  private unsolicitedError(msg: MessageOf<'error'>): void {
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

  private farewell(reason: string): void {
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

  private problem(error: ErrorPayload, text?: string): void {
    const problem: ClientProblem = { error };
    if (text !== undefined) problem.text = text;
    if (!this.emit('error', problem)) this.logger?.('warn', 'problem', { code: error.code, message: error.message });
  }

  // ---- endings ----

  /** Resolves when the agent says farewell or the transport closes, or after `ms`. */
  private untilEnded(ms: number): Promise<void> {
    if (this.farewellReason !== undefined || !this.session.open) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = this.clock.setTimeout(resolve, ms);
      this.endWaiters.push(() => {
        this.clock.clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Rejects every pending request and fails every open handle with `error` (a declined resume). */
  private failOpen(error: TapClientError): void {
    this.pending.rejectAll(error);
    this.tasks.failOpen(error);
  }

  /** Closes the client for good. */
  private finish(error: TapClientError): void {
    if (this.phase === 'closed') return;
    this.phase = 'closed';
    this.failOpen(error);
    for (const fn of this.endWaiters.splice(0)) fn();
    this.emit('closed', { reason: error.message });
  }
}

/** Opens a session on `transport` and resolves once it is established (spec: handshake). */
export async function connect(transport: Transport, options: ConnectOptions): Promise<TapClient> {
  return new TapClient(options).open(transport);
}

/**
 * Opens a session on a transport made by `factory`; after a loss the client makes a new one and
 * resumes the session (spec: sessions#resume).
 */
export async function connectWith(
  factory: () => Promise<Transport>,
  options: ConnectOptions & { reconnect?: Partial<ReconnectPolicy> | false },
): Promise<TapClient> {
  const client = new TapClient(options, factory, options.reconnect);
  return client.open(await factory());
}
