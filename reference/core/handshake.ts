/**
 * What the two handshake state machines share: events, steps, the established session, and the
 * helpers that sign, refuse and check incoming messages. The machines are pure functions
 * `(state, event) → step` with no I/O; a failed handshake is retried from a fresh initial state
 * (spec: handshake#failures).
 */
import type { AgentCard, MessageOf, TapMessage } from '../../schemas/src/index.ts';
import { isKnownType, mayReceive, type Role } from './catalogue.ts';
import { composeError, composeMessage, type ComposeContext } from './compose.ts';
import { errorPayload, type ErrorCode, type ErrorOptions, type ErrorPayload } from './errors.ts';
import { DEFAULT_SKEW_MS, type SessionParams } from './params.ts';
import { checkSignature, sign, type Hmac } from './signing.ts';

/** What is fed to a handshake machine: a message that passed decodeFrame and its type's schema, the step timer, or (requester) the start. */
export type HandshakeEvent = { kind: 'message'; message: TapMessage } | { kind: 'timeout' } | { kind: 'start' };

/** The session a completed handshake established, as each side sees it (spec: handshake#go). */
export interface EstablishedSession {
  role: Role;
  version: string;
  /** The envelope protocol of the session: "tap/" + version. */
  protocol: string;
  sessionId: string;
  resumeToken: string;
  resumed: boolean;
  params: SessionParams;
  local: AgentCard;
  peer: AgentCard;
  /**
   * Agent side: who the requester is — the credentials' principal, the binding's (a client
   * certificate), the key's ("agent:<peer>" by default), or "session:<session_id>" for nobody
   * (spec: authorization#principals).
   */
  principal?: string;
  /** Agent side: what the credentials that authenticated the principal allow, when they say (spec: authorization#credential-permissions). */
  authority?: CredentialAuthority;
  /** The key every message is signed with, or null without integrity (spec: integrity#negotiation). */
  integrity: SessionKey;
  granted: string[];
  missing: string[];
  /** The extensions the session uses, from the ack; empty in a session of 1.0 (spec: handshake#negotiated-extensions). */
  extensions: string[];
  resumeWindowMs: number;
  maxRetainedMessages: number;
  /** Agent side, on a granted resume: where each task's replay starts (spec: resume#reconnect). */
  resumeTasks?: { task_id: string; last_sequence: number }[];
}

/** What a session's credentials allow: the permissions they hold (a token's scopes) and when they expire. */
export interface CredentialAuthority {
  /** The permissions the credentials hold; a grant holds no permission beyond them. Absent: the grants alone decide. */
  permissions?: readonly string[];
  /** When the credentials expire, in ms since the epoch. */
  expiresAt?: number;
}

/** Credentials an authenticator accepted: the principal they prove and what they allow. */
export interface AuthenticatedCredentials extends CredentialAuthority {
  principal: string;
}

/** One transition of a handshake machine. */
export interface HandshakeStep<S> {
  state: S;
  /** Messages to send, in order; signed when integrity is agreed. */
  send: TapMessage[];
  /** Why the handshake failed (with close), or why one message was refused. */
  error?: ErrorPayload;
  /** Close the transport after sending `send` (no farewell) (spec: handshake#timeouts). */
  close?: boolean;
  /** Set on the step that establishes the session. */
  session?: EstablishedSession;
  /** False when the event is not the handshake's business (a task message after go); the caller handles it. */
  handled: boolean;
}

/** The key table of an agent: key_id → the key and the one agent id it is bound to (spec: authorization#principals). */
export interface KeyEntry {
  key: Uint8Array;
  peer: string;
  /** The principal the key authenticates; default "agent:<peer>" (spec: authorization#principals). */
  principal?: string;
}

/** The crypto and clock a machine needs, besides composition. */
export interface MachineContext extends ComposeContext {
  hmac?: Hmac;
  /** Skew window for signed messages, in ms (spec: integrity#skew). */
  skewMs?: number;
}

/** Signs a message when integrity is in force; otherwise returns it unchanged (spec: integrity#signing). */
export function seal<M extends TapMessage>(ctx: MachineContext, integrity: SessionKey, msg: M): M {
  if (!integrity) return msg;
  if (!ctx.hmac) throw new Error('integrity is in force but no hmac function was injected');
  return sign(msg, integrity.key, integrity.keyId, ctx.hmac) as M;
}

/** Who is speaking and in which session, for the messages a machine composes. */
export interface Speaker {
  self: string;
  sessionId?: string;
  integrity: SessionKey;
}

/** The pre-shared key in force in a session, or null without integrity (spec: integrity#keys). */
export type SessionKey = { keyId: string; key: Uint8Array } | null;

/** An error answering `offending`, in the speaker's session, signed when integrity is in force (spec: errors#correlation). */
export function refusal(
  ctx: MachineContext,
  who: Speaker,
  offending: TapMessage,
  code: ErrorCode,
  message: string,
  details?: Record<string, unknown>,
  options?: ErrorOptions,
): { msg: MessageOf<'error'>; error: ErrorPayload } {
  const error = errorPayload(code, message, details, options);
  const msg = composeError(
    ctx,
    { source: who.self, target: offending.source, replyTo: offending.message_id, taskId: offending.task_id, sessionId: who.sessionId },
    error,
  );
  return { msg: seal(ctx, who.integrity, msg), error };
}

/** A pong answering `ping`, in the speaker's session (spec: limits#heartbeats). */
export function pongFor(ctx: MachineContext, who: Speaker, ping: TapMessage): MessageOf<'pong'> {
  return seal(
    ctx,
    who.integrity,
    composeMessage(ctx, {
      type: 'pong',
      source: who.self,
      target: ping.source,
      reply_to: ping.message_id,
      session_id: who.sessionId,
      payload: {},
    }),
  );
}

/** INVALID_SIGNATURE's reason when msg is not signed by the key, or null (spec: integrity#verification). */
export function signatureProblem(ctx: MachineContext, msg: TapMessage, keyId: string, key: Uint8Array): string | null {
  if (!ctx.hmac) return 'this peer cannot verify signatures';
  const outcome = checkSignature(msg, key, ctx.hmac, keyId);
  if (outcome === 'ok') return null;
  return `the signature is ${outcome === 'missing' ? 'missing' : outcome === 'mismatch' ? 'wrong' : outcome === 'wrong-key' ? `not made with key ${keyId}` : 'malformed'}`;
}

/** REPLAY_DETECTED's reason when a first-seen message without sequence lies outside the skew window, or null (spec: integrity#skew). */
export function skewProblem(ctx: MachineContext, msg: TapMessage): string | null {
  if (msg.sequence !== undefined) return null;
  const skew = ctx.skewMs ?? DEFAULT_SKEW_MS;
  const at = Date.parse(msg.timestamp);
  const now = (ctx.now ?? Date.now)();
  return Math.abs(now - at) <= skew ? null : `the timestamp ${msg.timestamp} lies outside the ${skew} ms skew window`;
}

/**
 * The identity checks of a message once the session is named: source is the peer, target is
 * this side (IDENTITY_MISMATCH), and session_id is the session's (INVALID_SIGNATURE under
 * integrity, else PROTOCOL_VIOLATION). Returns the failing code and reason, or null
 * (spec: integrity#identity, integrity#session-binding).
 */
export function identityProblem(
  msg: TapMessage,
  self: string,
  peer: string,
  sessionId: string,
  integrity: boolean,
): { code: ErrorCode; message: string } | null {
  if (msg.source !== peer || msg.target !== self) {
    return {
      code: 'IDENTITY_MISMATCH',
      message: `${msg.type} from ${msg.source} to ${msg.target}; this session is between ${peer} and ${self}`,
    };
  }
  if (msg.session_id !== sessionId) {
    const what = msg.session_id === undefined ? 'carries no session_id' : `names session ${msg.session_id}`;
    return { code: integrity ? 'INVALID_SIGNATURE' : 'PROTOCOL_VIOLATION', message: `${msg.type} ${what}, not this session's` };
  }
  return null;
}

/**
 * How a machine in a pre-go phase classifies a message that is not the one it waits for: an
 * unknown or wrong-direction type (UNKNOWN_MESSAGE_TYPE), a ping (answered), a pong (liveness
 * only), an error (never answered), another handshake message (out of order), or anything else
 * (HANDSHAKE_REQUIRED) (spec: handshake#before-go).
 */
export function classifyEarly(receiver: Role, msg: TapMessage): 'unknown-type' | 'ping' | 'pong' | 'error' | 'handshake' | 'too-early' {
  if (!isKnownType(msg.type) || !mayReceive(receiver, msg.type)) return 'unknown-type';
  if (msg.type === 'ping' || msg.type === 'pong' || msg.type === 'error') return msg.type;
  if (msg.type.startsWith('handshake.')) return 'handshake';
  return 'too-early';
}
