/**
 * One requester session over one transport: the four-step handshake (the core's pure requester
 * machine drives it), the receive checks, answers to pings, and heartbeats (spec: handshake,
 * liveness). Tasks live a level up, in the client, so that they survive a reconnect.
 */
import type { MessageOf, MessageType, PayloadOf, TapMessage } from '../../schemas/src/index.ts';
import {
  composeError,
  composeMessage,
  DEFAULT_MAX_MESSAGE_BYTES,
  errorPayload,
  failureText,
  initialRequesterHandshake,
  messageIds,
  lowestVersion,
  protocolOf,
  requesterHandshake,
  seal,
  fitsUtf8,
  utf8ByteLength,
  type ComposeContext,
  type ExtraMembers,
  type EstablishedSession,
  type HandshakeEvent,
  type Hmac,
  type RandomSource,
  type RequesterHandshakeState,
} from '../core/index.ts';
import { OldestKey } from '../core/oldest.ts';
import { watchSend, type CloseInfo, type InboundFrame, type Transport } from '../transports/index.ts';
import { ClientCode, TapClientError } from './errors.ts';
import { handshakeResult, type HandshakeResult } from './handshake-result.ts';
import { checkInbound, type Inbound } from './inbound.ts';
import { ReceiveContexts } from './receive-context.ts';
import { Liveness } from '../core/liveness.ts';
import type { AgentCard, Clock, ErrorPayload, Logger, ProposedParams, WireEntry } from './types.ts';

export type { HandshakeResult } from './handshake-result.ts';

export type ResumeRequest = NonNullable<PayloadOf<'handshake.init'>['resume']>;
export type Credentials = NonNullable<PayloadOf<'handshake.init'>['credentials']>;

/** Everything a session needs to open. */
export interface SessionConfig {
  card: AgentCard;
  versions: string[];
  requires: string[];
  params: ProposedParams;
  credentials?: Credentials;
  integrity?: { keyId: string; key: Uint8Array };
  hmac: Hmac;
  random: RandomSource;
  /** The agent's id when known in advance; otherwise handshake.init targets "*". */
  target?: string;
  resume?: ResumeRequest;
  handshakeTimeoutMs: number;
  clock: Clock;
  logger?: Logger;
  /** The session's duplicate table, shared across reconnects (spec: sessions#duplicates). */
  seen: { has(id: string): boolean; add(id: string): void };
  /** Whether the client follows a task id. */
  follows(taskId: string): boolean;
  trace?: (entry: WireEntry) => void;
}

/** Where a session reports. */
export interface SessionHandlers {
  /** Called at once when handshake.go has arrived, before any later frame is read. */
  opened(result: HandshakeResult): void;
  /** A checked message of the established session (pings are answered here and not passed on). */
  message(msg: TapMessage): void;
  /** Something the peer got wrong, already answered when the spec says so; `taskId` names the task of a refused message. */
  problem(error: ErrorPayload, offending?: string, taskId?: string): void;
  /** The transport closed after the session opened; `lost` when nobody asked it to (a drop, or three missed pings). */
  closed(info: CloseInfo, lost: boolean): void;
}

type Phase = 'new' | 'handshake' | 'open' | 'closed';

/** Envelope members a caller sets on an outgoing message. */
export interface EnvelopeFields {
  task_id?: string;
  reply_to?: string;
  deadline?: string;
  idempotency_key?: string;
  metadata?: Record<string, unknown>;
}

/** A requester session on one transport. */
export class RequesterSession {
  /** Set once handshake.go has arrived. */
  handshake?: HandshakeResult;
  private phase: Phase = 'new';
  private machine: RequesterHandshakeState;
  private established?: EstablishedSession;
  private maxBytes: number;
  private liveness?: Liveness;
  private closing = false;
  private stepTimer: unknown;
  private readonly pongs = new Map<string, string>();
  private readonly oldestPong = new OldestKey(this.pongs);
  private readonly nextId: () => string;
  private readonly now = (): number => this.config.clock.now();
  private settleStart?: { resolve: (r: HandshakeResult) => void; reject: (e: Error) => void };
  private compose?: { version: string; ctx: ComposeContext };
  /** The promise of the last send: one several sends share is watched for a failure once (watchSend). */
  private lastSent?: Promise<void>;
  private readonly sendFailed = (err: unknown): void => this.config.logger?.('debug', 'send failed', { error: failureText(err) });
  private readonly inbound: ReceiveContexts;

  constructor(
    readonly transport: Transport,
    private readonly config: SessionConfig,
    private readonly handlers: SessionHandlers,
  ) {
    this.maxBytes = config.params.max_message_bytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.nextId = messageIds(config.random); // spec: envelope#message-id
    this.inbound = new ReceiveContexts(config);
    this.machine = initialRequesterHandshake({
      card: config.card,
      versions: config.versions,
      requires: config.requires,
      params: config.params,
      random: config.random,
      now: () => config.clock.now(),
      hmac: config.hmac,
      ...(config.target !== undefined ? { target: config.target } : {}),
      ...(config.credentials ? { credentials: config.credentials } : {}),
      ...(config.resume ? { resume: config.resume } : {}),
      ...(config.integrity ? { integrity: config.integrity } : {}),
    });
  }

  /** True between handshake.go and the end of the transport. */
  get open(): boolean {
    return this.phase === 'open';
  }

  /**
   * Starts the transport and runs the handshake: init → ack → ready → go. Rejects with a
   * TapClientError (the agent's code, or HANDSHAKE_FAILED) and closes the transport on failure.
   */
  start(): Promise<HandshakeResult> {
    const t = this.transport;
    t.onmessage = (frame) => this.receive(frame);
    t.onclose = (info) => this.transportClosed(info);
    t.onerror = (err) => this.config.logger?.('debug', 'transport error', { error: err.message });
    const done = new Promise<HandshakeResult>((resolve, reject) => (this.settleStart = { resolve, reject }));
    t.start().then(
      () => {
        if (this.phase !== 'new') return;
        this.phase = 'handshake';
        this.advance({ kind: 'start' });
      },
      (err: Error) =>
        this.fail(new TapClientError(ClientCode.HANDSHAKE_FAILED, `could not start the transport: ${err.message}`, { cause: err })),
    );
    return done;
  }

  /** Builds, signs and sends one message of the established session; returns it as sent. Throws if it exceeds max_message_bytes. */
  send<T extends MessageType>(type: T, payload: PayloadOf<T>, fields: EnvelopeFields = {}): MessageOf<T> {
    const s = this.established;
    if (!s) throw new TapClientError(ClientCode.CLOSED, `cannot send ${type}: the session is not established`, { unsent: true });
    // The request's own members go in as `extra`: no copy of them into the session's first.
    const msg = composeMessage(
      this.composeContext(),
      { type, source: this.config.card.agent_id, target: s.peer.agent_id, session_id: s.sessionId, payload },
      fields as ExtraMembers<T>,
    );
    const sealed = seal({ hmac: this.config.hmac }, s.integrity, msg as TapMessage);
    this.write(sealed);
    return sealed as MessageOf<T>;
  }

  /** Sends a message exactly as it was sent before (same id, same bytes): a safe re-send after a reconnect. */
  resend(msg: TapMessage): void {
    this.write(msg);
  }

  /** Closes the transport on purpose (no 'lost'). */
  async close(info: CloseInfo = { code: 1000, reason: 'session ended' }): Promise<void> {
    this.closing = true;
    this.liveness?.stop();
    await this.transport.close(info).catch(() => {});
  }

  /** Drops the transport as lost: the peer is gone, the client may reconnect. */
  lose(reason: string): void {
    if (this.phase === 'closed') return;
    this.config.logger?.('warn', 'session lost', { reason });
    this.liveness?.stop();
    void this.transport.close({ code: 1001, reason }).catch(() => {});
  }

  /** Sends an error about a bad incoming message; an `error` is never answered (spec: errors#no-answer). */
  answer(error: ErrorPayload, replyTo?: string, taskId?: string, source?: string): void {
    const target = this.established?.peer.agent_id ?? source;
    if (target === undefined || this.phase === 'closed') return;
    const msg = composeError(
      this.composeContext(),
      {
        source: this.config.card.agent_id,
        target,
        ...(replyTo !== undefined ? { replyTo } : {}),
        ...(taskId !== undefined ? { taskId } : {}),
        ...(this.established ? { sessionId: this.established.sessionId } : {}),
      },
      error,
    );
    try {
      this.write(seal({ hmac: this.config.hmac }, this.established?.integrity ?? null, msg));
    } catch (err) {
      this.config.logger?.('debug', 'could not answer', { error: (err as Error).message });
    }
  }

  /** What composeMessage needs, made again only when the version it speaks changes (at the ack). */
  private composeContext(): ComposeContext {
    const version = this.established?.version ?? lowestVersion(this.config.versions) ?? '1.0';
    if (this.compose?.version !== version)
      this.compose = { version, ctx: { nextId: this.nextId, now: this.now, protocol: protocolOf(version) } };
    return this.compose.ctx;
  }

  private write(msg: TapMessage): void {
    const text = JSON.stringify(msg);
    // Counted only when its length does not settle it (spec: limits#message-size).
    if (!fitsUtf8(text, this.maxBytes)) {
      throw new TapClientError('MESSAGE_TOO_LARGE', `${msg.type} is ${utf8ByteLength(text)} bytes; the session allows ${this.maxBytes}`);
    }
    if (this.phase === 'closed') return;
    this.config.trace?.({ dir: 'out', text });
    this.lastSent = watchSend(this.transport.send(text), this.lastSent, this.sendFailed);
  }

  /** Feeds one event to the handshake machine and carries out its step. */
  private advance(event: HandshakeEvent): boolean {
    const step = requesterHandshake(this.machine, event);
    this.machine = step.state;
    for (const m of step.send) {
      try {
        this.write(m);
      } catch (err) {
        this.fail(err as Error);
        return true;
      }
    }
    if (step.session) {
      this.clearStepTimer();
      this.establish(step.session);
    } else if (step.close || (step.error && this.machine.phase === 'failed')) {
      // A refusal of the init ends this attempt, fatal or not: the caller connects again (spec: handshake#failures).
      const error = step.error;
      this.fail(error ? TapClientError.fromPayload(error) : new TapClientError(ClientCode.HANDSHAKE_FAILED, 'the handshake failed'));
    } else if (step.error) {
      this.handlers.problem(step.error);
    } else if (event.kind !== 'message' || step.send.some((m) => m.type.startsWith('handshake.'))) {
      this.armStepTimer();
    }
    return step.handled;
  }

  private armStepTimer(): void {
    this.clearStepTimer();
    this.stepTimer = this.config.clock.setTimeout(() => {
      this.stepTimer = undefined;
      if (this.phase === 'handshake') this.advance({ kind: 'timeout' });
    }, this.config.handshakeTimeoutMs);
  }

  private clearStepTimer(): void {
    if (this.stepTimer !== undefined) this.config.clock.clearTimeout(this.stepTimer);
    this.stepTimer = undefined;
  }

  private establish(s: EstablishedSession): void {
    this.established = s;
    this.phase = 'open';
    this.maxBytes = s.params.max_message_bytes;
    this.transport.setMaxFrameBytes?.(s.params.max_message_bytes);
    this.handshake = handshakeResult(s);
    this.liveness = new Liveness(
      this.config.clock,
      s.params.heartbeat_ms,
      () => {
        try {
          this.send('ping', {});
        } catch {
          // The session is going; the next tick notices.
        }
      },
      () => this.lose('the agent missed three pings'),
    );
    this.liveness.start();
    const start = this.settleStart;
    this.settleStart = undefined;
    this.handlers.opened(this.handshake);
    start?.resolve(this.handshake);
  }

  private fail(error: Error): void {
    this.clearStepTimer();
    const start = this.settleStart;
    this.settleStart = undefined;
    if (this.phase !== 'closed') {
      this.phase = 'closed';
      this.closing = true;
      void this.transport.close({ code: 1002, reason: 'handshake failed' }).catch(() => {});
    }
    start?.reject(error);
  }

  private receive(frame: InboundFrame): void {
    if (this.phase === 'closed' || this.phase === 'new') return;
    const { config } = this;
    let verdict: Inbound;
    try {
      verdict = checkInbound(frame, this.inbound.for(this.phase, this.established, this.maxBytes));
    } catch (err) {
      this.handlers.problem(errorPayload('INTERNAL_ERROR', `could not check a frame: ${(err as Error).message}`));
      return;
    }
    const text = verdict.kind === 'reject' ? (verdict.text ?? new TextDecoder().decode(frame.bytes)) : verdict.text;
    config.trace?.({ dir: 'in', text });
    if (verdict.kind === 'reject') {
      if (verdict.answer) this.answer(verdict.error, verdict.replyTo, verdict.taskId, verdict.source);
      this.handlers.problem(verdict.error, verdict.text, verdict.taskId);
      return;
    }
    this.liveness?.heard();
    const msg = verdict.message;
    if (verdict.kind === 'duplicate') {
      // A repeated ping gets the original pong again, byte for byte (spec: sessions#duplicates).
      const pong = msg.type === 'ping' ? this.pongs.get(msg.message_id) : undefined;
      if (pong !== undefined) {
        config.trace?.({ dir: 'out', text: pong });
        void this.transport.send(pong).catch(() => {});
      }
      return;
    }
    config.seen.add(msg.message_id);
    if (this.phase === 'handshake') {
      this.advance({ kind: 'message', message: msg });
      return;
    }
    if (msg.type === 'ping') {
      const pong = this.send('pong', {}, { reply_to: msg.message_id });
      this.pongs.set(msg.message_id, JSON.stringify(pong));
      if (this.pongs.size > 64) this.pongs.delete(this.oldestPong.take());
      return;
    }
    if (msg.type === 'pong') return;
    try {
      this.handlers.message(msg);
    } catch (err) {
      // A fault of this requester must not take the session down with it.
      this.config.logger?.('error', 'could not handle a message', { type: msg.type, error: (err as Error).message });
      this.handlers.problem(errorPayload('INTERNAL_ERROR', `the requester could not handle ${msg.type}: ${(err as Error).message}`));
    }
  }

  private transportClosed(info: CloseInfo): void {
    if (this.phase === 'closed') return;
    const wasOpen = this.phase === 'open';
    if (!wasOpen) {
      this.fail(
        new TapClientError(
          ClientCode.HANDSHAKE_FAILED,
          `the transport closed during the handshake (${info.reason || info.code || 'no reason'})`,
        ),
      );
      return;
    }
    this.phase = 'closed';
    this.liveness?.stop();
    this.handlers.closed(info, !this.closing);
  }
}
