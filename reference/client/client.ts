/**
 * The TAP requester client: opens a session, submits tasks and follows them to their end,
 * answers plans, asks for status, cancels, shuts an agent down, and (given a way to reconnect)
 * resumes a lost session without losing or repeating a message (spec: tasks, resume, shutdown).
 * The state it keeps and its handling of incoming messages are in client-base.ts.
 */
import { loadTelemetry } from '../telemetry.ts';
import { SUPPORTED_VERSIONS } from '../core/catalogue.ts';
import { hmacSha256 } from '../crypto.ts';
import type { Transport } from '../transports/index.ts';
import { snapshotPayload } from './attempt.ts';
import { backoffDelay } from './backoff.ts';
import { ClientBase, DEFAULT_REQUEST_TIMEOUT_MS } from './client-base.ts';
import { ClientCode, TapClientError } from './errors.ts';
import { TaskHandle, type SubmitOptions } from './handle.ts';
import type { ConnectOptions, ReconnectPolicy, ShutdownOutcome } from './options.ts';
import { RequesterSession, type HandshakeResult, type ResumeRequest } from './session.ts';
import type { AgentCard, ProposedParams, SnapshotPayload, TaskListOptions, TaskPage, TaskSummary } from './types.ts';
import type { PayloadOf } from '../../schemas/src/index.ts';

/** A requester's side of one TAP session (across reconnects, when it has a transport factory). */
export class TapClient extends ClientBase {
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
    // The OpenTelemetry API loads before the session opens: a missing peer fails here, not on the first submit.
    if (this.options.telemetry && !this.telemetry) this.telemetry = await loadTelemetry(this.options.telemetry);
    const session = this.makeSession(transport, undefined);
    this.session = session;
    try {
      await session.start();
    } catch (err) {
      this.phase = 'closed';
      throw err;
    }
    // A required extension the session does not use, as in a session of 1.0, ends it (spec: handshake#negotiated-extensions).
    const unused = (this.options.extensions ?? [])
      .filter((e) => e.required === true && !this.hs.extensions.includes(e.uri))
      .map((e) => e.uri);
    if (unused.length > 0) {
      await this.close(`the session does not use the required extensions ${unused.join(', ')}`);
      throw new TapClientError(
        'EXTENSION_REQUIRED',
        `the agent ${this.hs.agentId} (TAP ${this.hs.version}) does not use the required extensions ${unused.join(', ')}; connect without requiring them or to an agent that supports them`,
      );
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

  /** The handle following a task id, if this client submitted it: every open task, and the newest `ENDED_TASKS_KEPT` (128) that ended. */
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
   * One page of this principal's tasks, filtered by `state` and `capability`; pass its
   * `nextCursor` back as `cursor`, with the same filter, for the next page (spec: tasks#listing).
   * TAP 1.1: in a session of 1.0 it rejects with UNKNOWN_MESSAGE_TYPE and sends nothing.
   */
  async listTasks(options: TaskListOptions = {}): Promise<TaskPage> {
    if (this.hs.version === '1.0') {
      throw new TapClientError('UNKNOWN_MESSAGE_TYPE', `task.list is TAP 1.1; the agent ${this.hs.agentId} speaks 1.0 in this session`, {
        unsent: true,
      });
    }
    const payload: PayloadOf<'task.list'> = {};
    if (options.state !== undefined) payload.state = options.state;
    if (options.capability !== undefined) payload.capability = options.capability;
    if (options.cursor !== undefined) payload.cursor = options.cursor;
    if (options.limit !== undefined) payload.limit = options.limit;
    const reply = await this.request('task.list', payload, {});
    if (reply.type === 'error') throw TapClientError.fromPayload(reply.payload);
    if (reply.type !== 'task.page') throw new TapClientError('PROTOCOL_VIOLATION', `task.list was answered with ${reply.type}`);
    const page: TaskPage = { tasks: reply.payload.tasks };
    if (reply.payload.next_cursor !== undefined) page.nextCursor = reply.payload.next_cursor;
    return page;
  }

  /** Every task of this principal that matches the filter, page after page (spec: tasks#listing). */
  async *allTasks(options: Omit<TaskListOptions, 'cursor'> = {}): AsyncGenerator<TaskSummary> {
    let cursor: string | undefined;
    do {
      const page = await this.listTasks({ ...options, ...(cursor !== undefined ? { cursor } : {}) });
      yield* page.tasks;
      cursor = page.nextCursor;
    } while (cursor !== undefined);
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

  // ---- sessions ----

  protected makeSession(transport: Transport, resume: ResumeRequest | undefined): RequesterSession {
    const o = this.options;
    const params: ProposedParams = { request_timeout_ms: DEFAULT_REQUEST_TIMEOUT_MS, ...o.params };
    const session: RequesterSession = new RequesterSession(
      transport,
      {
        card: this.card,
        versions: o.versions ?? [...SUPPORTED_VERSIONS],
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
        problem: (error, text, taskId) => this.problem(error, text, taskId),
        closed: (_info, lost) => this.sessionClosed(session, lost),
      },
    );
    return session;
  }

  /** A session reached handshake.go: adopt it, and on a resume re-send what was unanswered. */
  protected opened(session: RequesterSession, hs: HandshakeResult, resume: ResumeRequest | undefined): void {
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

  protected sessionClosed(session: RequesterSession, lost: boolean): void {
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
  protected async reconnect(): Promise<void> {
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

  protected resumeRequest(previous: HandshakeResult): ResumeRequest {
    return { session_id: previous.sessionId, resume_token: previous.resumeToken, tasks: this.tasks.resumeList() };
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
