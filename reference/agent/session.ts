/**
 * One transport connection of the agent and its inbound pipeline. Every frame passes the checks
 * in the order the spec fixes, the first failure deciding the error: size → JSON and I-JSON →
 * envelope schema → version → signature → skew → identity (with session_id) → duplicate →
 * type → handshake phase → payload schema → the request's own checks (spec:
 * errors#order-of-checks). Nothing ever answers an `error`; every request gets exactly one
 * direct reply, sent before its effects (spec: messages#requests-and-replies).
 */
import type { MessageOf, MessageType, PayloadOf, TapMessage } from '../../schemas/src/index.ts';
import { agentHandshake, decodeFrame, errorPayload, initialAgentHandshake, isFatal } from '../core/index.ts';
import { extended } from '../core/extended.ts';
import type { AgentHandshakeState, ErrorPayload, EstablishedSession } from '../core/index.ts';
import type { CloseInfo, InboundFrame } from '../core/frame.ts';
import { watchSend, type Transport } from '../transports/transport.ts';
import { CredentialCheck } from './credentials.ts';
import { connectionHandshakeConfig, sessionEstablished, sessionPending } from './handshake.ts';
import { envelopeProblem, messageProblem, type Envelope } from './inbound.ts';
import { authenticScreen } from './forged-frames.ts';
import { admitSession, sourceOf } from './shares.ts';
import { ConnectionTimers, transportTrouble } from './liveness.ts';
import { DuplicateTable, rememberedReplies, replyTexts, type Remembered, type Reply } from './duplicates.ts';
import { appended } from '../core/appended.ts';
import { buildMessage, BoundedMap, type Addressing } from './outbound.ts';
import { handleRequest } from './requests.ts';
import type { Runtime } from './runtime.ts';
import { fatalCloseCode, type Replier, type RefusalTarget } from './replier.ts';
import { pendingAddressing, type Session } from './sessions.ts';
import { connectionClosed, endSession, onFarewell, onPeerError, onShutdownRequest } from './shutdown.ts';
import type { TaskRunner } from './task-runner.ts';

const IDENTIFIER = /^[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*$/;
/** Messages a connection remembers before its session is established, and their bytes (spec: limits#table-limits). */
const PRE_HANDSHAKE_DUPLICATES = 64;
const PRE_HANDSHAKE_DUPLICATE_BYTES = 256 * 1024;
/** The largest frame taken before handshake.ack fixed max_message_bytes (spec: limits#pre-handshake). */
export const PRE_HANDSHAKE_MAX_BYTES = 65_536;

/** How a transport is attached. */
export interface AttachOptions {
  /** The stdio binding: end of input is a shutdown, a lost peer is lost at once (spec: bindings-stdio). */
  stdio?: boolean;
  /** The principal the binding authenticated, such as a verified client certificate's (spec: security#client-certificates). */
  principal?: string;
}

/** One connection: the pipeline, the handshake and liveness of one transport. */
export class Connection implements Replier {
  readonly stdio: boolean;
  /** The established session this connection carries. */
  session?: Session;
  private hs: AgentHandshakeState;
  private pending?: EstablishedSession;
  /** Duplicate table before the session is established; merged into the session's at go. */
  private readonly early: DuplicateTable;
  /** Errors sent to messages refused before the duplicate check, by message_id and code. */
  private readonly earlyRefusals = new BoundedMap<string, string>(1024);
  private recording?: Reply[];
  /** The text of the handshake.init that this connection's ack answered, to recognise its repeat. */
  private openingInit?: string;
  /** The text of the frame being handled. */
  frameText?: string;
  /** The frame the transport's screen decoded last, so that the pipeline does not decode it again. */
  private screened?: { frame: InboundFrame; decoded: ReturnType<typeof decodeFrame> };
  /** The peer left too much unread: the connection was dropped and nothing more is read or sent. */
  private cut = false;
  /** The source of the message being handled, to address replies before the peer is known. */
  private currentSource?: string;
  private closed = false;
  /** What the last send returned, settled once the transport took the message; sends may share one, watched once for a failure. */
  private lastSend?: Promise<void>;
  private readonly sendFailed = (err: unknown): void => this.rt.log(...transportTrouble('send failed', err, 'debug'));
  private closeSeen = false;
  /** Closed by this side on purpose (a resume elsewhere, an ended session): no loss handling. */
  deliberate = false;
  private readonly timers: ConnectionTimers;
  private readonly credentials: CredentialCheck;
  readonly done: Promise<CloseInfo>;
  private resolveDone!: (info: CloseInfo) => void;

  constructor(
    readonly rt: Runtime,
    readonly runner: TaskRunner,
    readonly transport: Transport,
    options: AttachOptions = {},
  ) {
    this.stdio = options.stdio ?? false;
    this.credentials = new CredentialCheck(rt, this, () => !this.closed && !this.session && !this.pending);
    this.hs = initialAgentHandshake(connectionHandshakeConfig(rt, this.credentials.verify, options.principal));
    this.early = new DuplicateTable(PRE_HANDSHAKE_DUPLICATES, PRE_HANDSHAKE_DUPLICATE_BYTES, 0);
    this.timers = new ConnectionTimers(rt.clock);
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
  }

  /** Starts reading frames and the handshake timer (spec: handshake#timeouts). */
  async start(): Promise<void> {
    this.transport.onmessage = this.credentials.gate((frame) => this.onFrameGuarded(frame));
    this.transport.onclose = (info) => this.onClose(info);
    this.transport.onerror = (err) => this.rt.log(...transportTrouble('transport', err));
    this.transport.setMaxFrameBytes?.(this.maxBytes());
    this.armHandshakeTimer();
    if (this.rt.shuttingDown) {
      await this.close(1001, 'the agent is shutting down');
      return;
    }
    await this.transport.start();
  }

  /** Sends one serialized message; a no-op once closed. */
  send(text: string): void {
    // Nothing follows the session's farewell, nor a fatal error or a deliberate close (spec: shutdown#farewell, errors#fatal-errors).
    if (this.closed || this.cut || this.deliberate || this.session?.ended) return;
    // A peer that leaves this much unread is dropped at once like a lost one; its session stays resumable (spec: limits#back-pressure).
    const unsent = this.transport.unsentBytes?.() ?? 0;
    if (unsent > this.rt.settings.maxUnsentBytes) return this.cutOff(unsent);
    this.lastSend = watchSend(this.transport.send(text), this.lastSend, this.sendFailed);
  }

  /** Drops a connection whose peer does not read: once, with one line in the log (spec: limits#back-pressure). */
  private cutOff(unsent: number): void {
    this.cut = true;
    this.timers.stop();
    const session = this.session ? `; session ${this.session.id} stays resumable` : '';
    this.rt.log(
      'warn',
      `the peer left ${unsent} bytes unread, over the limit of ${this.rt.settings.maxUnsentBytes}: dropping the connection${session}`,
    );
    if (this.transport.abort) this.transport.abort('the peer does not read');
    else void this.transport.close({ code: 1008, reason: 'the peer does not read' }).catch(() => {});
  }

  /** At once, unless more than maxUnsentBytes / 16 is unread; then when the last send was taken (spec: limits#back-pressure). */
  writable(): Promise<void> {
    const unsent = this.transport.unsentBytes?.() ?? 0;
    if (this.closed || !this.lastSend || unsent <= this.rt.settings.maxUnsentBytes / 16) return Promise.resolve();
    return this.lastSend.catch(() => {});
  }

  /** Closes the transport on purpose. */
  async close(code: number, reason: string): Promise<void> {
    this.deliberate = true;
    this.timers.stop();
    if (this.closed) return;
    await this.transport.close({ code, reason }).catch(() => {});
  }

  /**
   * Sends the direct reply to the message being handled and remembers it for duplicates: the
   * text itself, or `rebuild` when the text can be made again byte for byte at less cost.
   */
  reply(text: string, rebuild?: { rebuild: () => string; bytes: number }): void {
    if (this.recording) this.recording = appended(this.recording, rebuild ?? text);
    this.send(text);
  }

  /** Remembers, for duplicates of the message being handled, a reply that is not sent now (spec: tasks#quiet-requests). */
  remember(reply: Reply): void {
    if (this.recording) this.recording = appended(this.recording, reply);
  }

  /** Builds and sends a reply addressed by this connection's session state. */
  replyWith<T extends MessageType>(type: T, payload: PayloadOf<T>, extras: { reply_to?: string; task_id?: string }): void {
    this.reply(buildMessage(this.rt.out, this.addressing(), type, payload, extras));
  }

  /** Answers an offending message with `error` (never an `error` itself); closes after a fatal one. */
  refuse(error: ErrorPayload, to: RefusalTarget = {}): void {
    if (to.type === 'error') return;
    this.rt.monitor.requestRefused(String(error.code));
    // A message refused before the duplicate check marks no id as used; its repeat, refused the
    // same way, gets the first error again byte for byte, so a request never gets two different replies.
    const key = to.early && to.replyTo !== undefined ? `${to.replyTo}\u0000${error.code}` : undefined;
    let text = key !== undefined ? this.earlyRefusals.get(key) : undefined;
    if (text === undefined) {
      const addressing = this.addressing(typeof to.source === 'string' ? to.source : undefined);
      text = buildMessage(this.rt.out, addressing, 'error', error, { reply_to: to.replyTo, task_id: to.taskId });
      if (key !== undefined) this.earlyRefusals.set(key, text);
    }
    this.reply(text);
    if (isFatal(error)) void this.close(fatalCloseCode(error.code), error.code);
  }

  /** Where messages of this connection go: the session's peer, else the sender of the message at hand. */
  addressing(source: string | undefined = this.currentSource): Addressing {
    if (this.session) return this.session.addressing();
    if (this.pending) return pendingAddressing(this.pending);
    return { target: source !== undefined && IDENTIFIER.test(source) ? source : 'unknown' };
  }

  /** The frame limit now: the negotiated one, or before handshake.ack at most PRE_HANDSHAKE_MAX_BYTES (spec: limits#pre-handshake). */
  private maxBytes(): number {
    const negotiated = (this.session?.params ?? this.pending?.params)?.max_message_bytes;
    return negotiated ?? Math.min(PRE_HANDSHAKE_MAX_BYTES, this.rt.card.limits.max_message_bytes);
  }

  /**
   * The inbound pipeline behind a guard: whatever a frame does, nothing throws out into the
   * transport, and a frame that broke the pipeline is answered INTERNAL_ERROR (spec: limits#nesting).
   */
  private onFrameGuarded(frame: InboundFrame): void {
    try {
      this.onFrame(frame);
    } catch (err) {
      this.recording = undefined;
      this.rt.log('error', `handling a frame: ${(err as Error)?.stack ?? String(err)}`);
      try {
        const failed = errorPayload('INTERNAL_ERROR', 'the agent failed to handle the message');
        this.send(buildMessage(this.rt.out, this.addressing(), 'error', failed, {}));
      } catch {
        // Nothing more can be said on this connection; the agent itself goes on.
      }
    }
  }

  /** The inbound pipeline (spec: errors#order-of-checks). */
  private onFrame(frame: InboundFrame): void {
    if (this.closed || this.cut || this.session?.ended) return;
    this.timers.heard();
    const screened = this.screened?.frame === frame ? this.screened.decoded : undefined;
    this.screened = undefined;
    const decoded = screened ?? decodeFrame(frame, { maxMessageBytes: this.maxBytes(), rejectDuplicateMembers: true });
    if (!decoded.ok) {
      // Only a top-level "type":"error" makes a broken frame an error, never answered (spec: errors#no-replies-to-errors).
      this.refuse(decoded.error, {
        replyTo: decoded.replyTo,
        taskId: decoded.taskId,
        type: decoded.type,
        source: decoded.source ?? '',
        early: true,
      });
      return;
    }
    const msg = decoded.message as Envelope;
    const to = { replyTo: msg.message_id, taskId: msg.task_id as string | undefined, type: msg.type, source: msg.source };
    this.currentSource = msg.source;
    // A repeat of the opening init was written before the ack and is checked as then (spec: idempotency#repeated-init).
    const openingRepeat = this.openingInit !== undefined && decoded.text === this.openingInit;
    const seen = this.seenReplies(msg, decoded.text);
    const problem = envelopeProblem(msg, {
      version: openingRepeat ? undefined : (this.session?.version ?? this.pending?.version),
      supported: this.rt.settings.versions,
      key: this.session?.signing ?? this.pending?.integrity ?? undefined,
      peer: this.session?.peerId ?? this.pending?.peer.agent_id,
      self: this.rt.agentId,
      sessionId: this.session?.id ?? this.pending?.sessionId,
      duplicate: seen !== undefined,
      hmac: this.rt.hmac,
      now: this.rt.now(),
      skewMs: this.rt.settings.skewMs,
    });
    // Checks before the duplicate stage: the message is not remembered, but a repeat that fails the same way gets the same error again.
    if (problem) return this.refuse(problem, extended(to, { early: true }));

    // Duplicate: the original reply again, byte for byte (spec: idempotency#duplicate-messages).
    if (seen) {
      for (const reply of seen.replies) for (const text of replyTexts(reply)) this.send(text);
      return;
    }
    this.recording = [];
    this.frameText = decoded.text;
    try {
      this.dispatch(msg, to);
    } catch (err) {
      this.rt.log('error', `handling ${msg.type}: ${(err as Error)?.stack ?? String(err)}`);
      if (this.recording.length === 0) this.refuse(errorPayload('INTERNAL_ERROR', 'the agent failed to handle the message'), to);
    } finally {
      const entry: Remembered = { replies: this.recording };
      this.recording = undefined;
      if (msg.type === 'handshake.init') entry.request = decoded.text;
      (this.session?.seen ?? this.early).set(msg.message_id, entry);
    }
  }

  /** The remembered replies of a duplicate (spec: idempotency#duplicate-messages, resume#replayed-resume). */
  private seenReplies(msg: { type: string; message_id: string; payload?: unknown }, text: string): Remembered | undefined {
    const own = (id: string) => this.session?.seen.get(id) ?? this.early.get(id);
    return rememberedReplies(own, (id) => this.rt.sessions.get(id)?.seen, msg, text, !this.session && !this.pending);
  }

  /** Type → handshake phase → payload schema → the message's own handling. */
  private dispatch(envelope: Envelope, to: RefusalTarget): void {
    const phase = this.session?.established === true ? 'established' : this.hs.phase;
    const problem = messageProblem(envelope, phase, this.session?.version ?? this.pending?.version);
    if (problem) return this.refuse(problem, to);
    const msg = envelope as unknown as TapMessage;
    if (msg.type === 'error') return onPeerError(this, msg as MessageOf<'error'>);
    switch (msg.type) {
      case 'handshake.init':
      case 'handshake.ready':
        return this.handshake(msg);
      case 'ping':
        return this.replyWith('pong', {}, { reply_to: msg.message_id });
      case 'pong':
        return;
      case 'session.farewell':
        return onFarewell(this, msg);
      case 'shutdown.request':
        return onShutdownRequest(this, msg);
      default:
        return handleRequest(this, this.session!, msg);
    }
  }

  /** handshake.init and handshake.ready, through the core state machine (spec: handshake). */
  private handshake(msg: TapMessage): void {
    const wasWaitingForInit = this.hs.phase === 'awaiting-init';
    const step = agentHandshake(this.hs, { kind: 'message', message: msg });
    if (wasWaitingForInit && step.state.phase === 'awaiting-ready' && !step.state.pending.resumed) {
      // spec: limits#sources: a new session (a declined resume too) needs room in its source's
      // share and in the table; an orphaned session with no unfinished task gives way first.
      const busy = admitSession(this.rt, this.runner, sourceOf(step.state.pending, this.transport.origin));
      if (busy) {
        this.refuse(busy, { replyTo: msg.message_id, source: msg.source });
        void this.close(1013, 'too many sessions');
        return;
      }
    }
    this.hs = step.state;
    if (wasWaitingForInit && this.hs.phase === 'awaiting-ready') {
      this.pending = this.hs.pending;
      this.openingInit = this.frameText;
      sessionPending(this.rt, this.pending, this.transport.origin);
      this.transport.setMaxFrameBytes?.(this.pending.params.max_message_bytes);
      this.guardNumbering();
      this.armHandshakeTimer();
    }
    for (const m of step.send) this.reply(JSON.stringify(m));
    if (step.session) {
      this.timers.stopStep();
      this.session = sessionEstablished(this, step.session, this.early, this.transport.origin);
      this.pending = undefined;
      this.timers.live(
        this.session.params.heartbeat_ms,
        () => this.session && this.send(this.session.message('ping', {})),
        () => this.peerGone(),
      );
    }
    if (step.close) void this.close(fatalCloseCode(step.error?.code), step.error?.code ?? 'handshake failed');
  }

  /**
   * Under integrity, gives the transport the test of an authentic new message of the peer, so
   * that a frame forged into the connection takes no number of it (spec: bindings-nats#forged-frames).
   */
  private guardNumbering(): void {
    if (!this.pending?.integrity) return;
    this.transport.screen = authenticScreen({
      maxBytes: () => this.maxBytes(),
      key: () => this.session?.signing ?? this.pending?.integrity ?? undefined,
      peer: () => this.session?.peerId ?? this.pending?.peer.agent_id,
      sessionId: () => this.session?.id ?? this.pending?.sessionId,
      agentId: this.rt.agentId,
      hmac: this.rt.hmac,
      seen: (msg, text) => this.seenReplies(msg, text) !== undefined,
      keep: (frame, decoded) => (this.screened = { frame, decoded }),
    });
  }

  private armHandshakeTimer(): void {
    this.timers.armStep(this.rt.settings.handshakeTimeoutMs, () => {
      const step = agentHandshake(this.hs, { kind: 'timeout' });
      this.hs = step.state;
      if (step.close) {
        this.rt.log('info', 'the handshake timed out; closing the transport');
        void this.close(1008, 'handshake timeout');
      }
    });
  }

  /** Three pings went unanswered: the transport counts as lost (spec: limits#heartbeats). */
  private peerGone(): void {
    this.rt.log('info', 'the requester stopped answering pings; the transport counts as lost');
    if (this.stdio && this.session) {
      // On stdio the session is lost at once: its tasks end SESSION_LOST, sent while the pipe is still open (spec: bindings-stdio#session).
      void endSession(this.rt, this.runner, this.session, 'SESSION_LOST', 'the requester stopped answering pings', false, 0);
      return;
    }
    void this.transport.close({ code: 1001, reason: 'peer gone' }).catch(() => {});
  }

  /**
   * The transport closed. On stdio, end of input leaves the output open: the session shuts down
   * (hand-offs, farewell) and only then is the connection done (spec: bindings-stdio#end-of-input).
   */
  private onClose(info: CloseInfo): void {
    if (this.closeSeen) return;
    this.closeSeen = true;
    this.timers.stop();
    const eof = this.stdio && info.reason === 'eof' && !this.deliberate;
    if (!eof) this.closed = true;
    // A session acknowledged but never established leaves nothing to resume.
    if (this.pending && !this.pending.resumed && !this.session) this.rt.persist({ t: 'session-end', id: this.pending.sessionId });
    connectionClosed(this, info, eof)
      .catch((err: unknown) => this.rt.log('error', `closing the session: ${(err as Error)?.message ?? String(err)}`))
      .finally(() => {
        this.closed = true;
        this.resolveDone(info);
      });
  }
}
