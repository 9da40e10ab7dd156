/**
 * A session as the agent keeps it: it outlives its transport connection for the resume window,
 * binds a principal, a resume token and the duplicate table, and carries every message it
 * sends to whichever connection is attached now (spec: sessions).
 */
import type { MessageType, PayloadOf } from '../../schemas/src/index.ts';
import type { CredentialAuthority, EstablishedSession } from '../core/handshake.ts';
import type { SessionParams } from '../core/params.ts';
import { DuplicateTable } from './duplicates.ts';
import { protocolOf } from '../core/versions.ts';
import { buildMessage, type Addressing, type EnvelopeExtras, type OutboundContext, type SigningKey } from './outbound.ts';
import type { TimerHandle } from '../core/platform.ts';

/** The message ids every session remembers at least, whatever their replies weigh (spec: idempotency#duplicate-table). */
export const MIN_DUPLICATE_ENTRIES = 1024;

/** What a session needs of the connection that carries it now. */
export interface Link {
  /** Sends one serialized message; a no-op once the connection is closed. */
  send(text: string): void;
  /**
   * Resolves when the connection has room for more: at once, unless what the peer has not read
   * yet passed the high-water mark; then when the transport took it (or the connection closed).
   */
  writable(): Promise<void>;
  /** Closes the connection; `lost` false means it was closed on purpose (no resume window). */
  close(code: number, reason: string): Promise<void>;
  /** True for stdio: one session per process, no reconnect. */
  readonly stdio: boolean;
}

/** The stored form of a session, as journaled. */
export interface SessionInfo {
  id: string;
  resumeToken: string;
  principal: string;
  peerId: string;
  version: string;
  params: SessionParams;
  keyId?: string;
  /**
   * Whose share of the caps the session draws on, when not its principal: for an anonymous
   * session, "origin:" and the origin of the connection that opened it (spec: limits#sources).
   */
  share?: string;
}

/** One logical session (spec: sessions). */
export class Session {
  readonly id: string;
  readonly resumeToken: string;
  readonly principal: string;
  readonly peerId: string;
  /** The source whose share of the caps the session draws on: its principal, or the origin of an anonymous one (spec: limits#sources). */
  readonly share: string;
  version: string;
  params: SessionParams;
  /** The extensions the session uses, as its last handshake negotiated them; none in 1.0 (spec: handshake#negotiated-extensions). */
  extensions: readonly string[] = [];
  signing?: SigningKey;
  /** When the session lost its transport (ms since the epoch); undefined while one is attached. */
  orphanedAt?: number;
  /** What the credentials of its last handshake allow, when they say: they bound every grant (spec: authorization#credential-permissions). */
  authority?: CredentialAuthority;
  /** The connection carrying the session now, if any. */
  link?: Link;
  /** message_id → the replies it got, for duplicates, bounded by entries and bytes (spec: idempotency#duplicate-table). */
  readonly seen: DuplicateTable;
  /** handshake.go was sent: requests other than the handshake's are taken. */
  established = false;
  /** Shutdown or farewell under way: new work is refused with SHUTTING_DOWN. */
  ending = false;
  /** The session is over; nothing more is sent and it cannot be resumed. */
  ended = false;
  resumeTimer?: TimerHandle;
  /** The session's one ending, once it began (spec: shutdown#idempotent). */
  closing?: Promise<void>;
  /** Ends the drain of a shutdown under way at once. */
  cutDrain?: () => void;
  /** Nothing more can arrive on the session (end of input on stdio). */
  inputEnded = false;
  /** During a drain that waits only for running tasks (its input ended): called as each task ends. */
  drainCheck?: () => void;
  /** Resolves when the session has ended. */
  readonly done: Promise<void>;
  private resolveDone!: () => void;

  constructor(
    info: SessionInfo,
    private readonly out: OutboundContext,
    limits: { maxDuplicateEntries: number; maxDuplicateBytes: number },
  ) {
    this.id = info.id;
    this.resumeToken = info.resumeToken;
    this.principal = info.principal;
    this.peerId = info.peerId;
    this.share = info.share ?? info.principal;
    this.version = info.version;
    this.params = info.params;
    this.seen = new DuplicateTable(limits.maxDuplicateEntries, limits.maxDuplicateBytes, MIN_DUPLICATE_ENTRIES);
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
  }

  /** The journaled form. */
  info(): SessionInfo {
    const info: SessionInfo = {
      id: this.id,
      resumeToken: this.resumeToken,
      principal: this.principal,
      peerId: this.peerId,
      version: this.version,
      params: this.params,
    };
    if (this.signing) info.keyId = this.signing.keyId;
    if (this.share !== this.principal) info.share = this.share;
    return info;
  }

  /** Where this session's messages go, in its negotiated version (spec: versioning#tap-1-1). */
  addressing(): Addressing {
    return { target: this.peerId, protocol: protocolOf(this.version), sessionId: this.id, signing: this.signing };
  }

  /** Serializes a message of this session (session_id set, signed under integrity). */
  message<T extends MessageType>(type: T, payload: PayloadOf<T>, extras: EnvelopeExtras = {}): string {
    return buildMessage(this.out, this.addressing(), type, payload, extras);
  }

  /** Sends a serialized message on the current connection, if one is attached. */
  deliver(text: string): void {
    if (!this.ended) this.link?.send(text);
  }

  /** Resolves when the connection carrying the session has room for more (at once without one). */
  writable(): Promise<void> {
    return this.ended || !this.link ? Promise.resolve() : this.link.writable();
  }

  /** Marks the session over. */
  finish(): void {
    if (this.ended) return;
    this.ended = true;
    this.resolveDone();
  }
}

/** Where the messages of a session go between its handshake.ack and handshake.go (spec: versioning#tap-1-1). */
export function pendingAddressing(p: EstablishedSession): Addressing {
  return { target: p.peer.agent_id, protocol: protocolOf(p.version), sessionId: p.sessionId, signing: p.integrity ?? undefined };
}
