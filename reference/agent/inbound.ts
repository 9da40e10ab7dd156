/**
 * The envelope checks of one inbound message, in the order the spec fixes after decoding:
 * version → signature → skew → identity → session binding, then, past the duplicate check,
 * type → handshake phase → payload schema (spec: errors#order-of-checks). Each check returns the
 * error to answer, or null; the connection answers it.
 */
import {
  allowedBeforeHandshake,
  compareVersions,
  errorPayload,
  isKnownType,
  isRequesterToAgent,
  messageEntry,
  parseVersion,
  protocolVersion,
  SUPPORTED_VERSIONS,
  validateDecoded,
  type ErrorPayload,
} from '../core/index.ts';
import type { DecodedEnvelope } from '../../schemas/src/index.ts';
import type { Hmac } from '../core/platform.ts';
import { outsideSkew, verifyIncoming } from './integrity.ts';
import type { SigningKey } from './outbound.ts';

const SUPPORTED_MAJORS = new Set(SUPPORTED_VERSIONS.map((v) => parseVersion(v)!.major));

/** A decoded message as the envelope checks read it (schemas/src/envelope.ts). */
export type Envelope = DecodedEnvelope;

/** What the connection knows when a message arrives. */
export interface EnvelopeState {
  /** The negotiated version; undefined before handshake.ack and for a repeat of the opening init. */
  version?: string;
  /** The versions this agent speaks (default SUPPORTED_VERSIONS). */
  supported?: readonly string[];
  /** The agreed signing key, once there is one. */
  key?: SigningKey;
  /** The requester this session is with, once known. */
  peer?: string;
  /** This agent's id. */
  self: string;
  /** The session this connection carries or has acknowledged. */
  sessionId?: string;
  /** The message is a duplicate: its original replies are sent again, so skew is not checked. */
  duplicate: boolean;
  hmac: Hmac;
  now: number;
  skewMs: number;
}

/**
 * Version: a spoken major before the ack, exactly the negotiated version after it. Another minor
 * of the negotiated major is refused without ending the session; another major ends it
 * (spec: versioning#version-check, versioning#stray-minor, idempotency#repeated-init).
 */
function versionProblem(msg: Envelope, version: string | undefined, supported = SUPPORTED_VERSIONS): ErrorPayload | null {
  const v = protocolVersion(msg.protocol as string);
  const major = v ? parseVersion(v)?.major : undefined;
  const versionOk = version !== undefined ? v === version : major !== undefined && SUPPORTED_MAJORS.has(major);
  if (versionOk) return null;
  const why = version !== undefined ? `the session speaks tap/${version}` : `this agent speaks ${supported.join(', ')}`;
  const sameMajor = version !== undefined && major !== undefined && major === parseVersion(version)?.major;
  return errorPayload(
    'UNSUPPORTED_VERSION',
    `protocol ${String(msg.protocol)} is not spoken here; ${why}${sameMajor ? '; the message had no effect' : ''}`,
    { supported: [...supported] },
    { fatal: !sameMajor },
  );
}

/** The checks before the duplicate stage; a message that fails them is not remembered (spec: errors#order-of-checks). */
export function envelopeProblem(msg: Envelope, state: EnvelopeState): ErrorPayload | null {
  const versionError = versionProblem(msg, state.version, state.supported);
  if (versionError) return versionError;

  // Signature and skew, once a key is agreed (spec: integrity#verification, integrity#skew).
  const { key } = state;
  if (key) {
    const outcome = verifyIncoming(msg, key, state.hmac);
    if (outcome !== 'ok') return errorPayload('INVALID_SIGNATURE', `the signature is ${outcome}; the message had no effect`);
    if (!state.duplicate && msg.sequence === undefined && outsideSkew(msg.timestamp, state.now, state.skewMs)) {
      return errorPayload('REPLAY_DETECTED', `the timestamp ${String(msg.timestamp)} lies outside the ${state.skewMs} ms skew window`);
    }
  }

  // Identity and session binding (spec: integrity#identity, integrity#session-binding).
  const { peer, self, sessionId } = state;
  if (msg.type !== 'handshake.init' || peer !== undefined) {
    const targetOk = msg.target === self || (msg.type === 'handshake.init' && msg.target === '*');
    if ((peer !== undefined && msg.source !== peer) || !targetOk) {
      return errorPayload(
        'IDENTITY_MISMATCH',
        `a message from ${msg.source} to ${msg.target}; this session is between ${peer ?? 'its requester'} and ${self}`,
      );
    }
  }
  // A repeat of the session's handshake.init carries no session_id and goes on to the duplicate
  // check (spec: idempotency#repeated-init); one that names a session is bound like any other.
  const initRepeat = msg.type === 'handshake.init' && msg.session_id === undefined;
  if (sessionId !== undefined && !initRepeat && msg.session_id !== sessionId) {
    const what = msg.session_id === undefined ? 'carries no session_id' : `names session ${String(msg.session_id)}`;
    return errorPayload(key ? 'INVALID_SIGNATURE' : 'PROTOCOL_VIOLATION', `the message ${what}, not this session's; it had no effect`);
  }
  return null;
}

/** True when `since` names a version later than `version`: a type that the session's catalogue lacks (spec: versioning#tap-1-1). */
function laterThan(since: string | undefined, version: string): boolean {
  const s = since === undefined ? null : parseVersion(since);
  const v = parseVersion(version);
  return !!s && !!v && compareVersions(s, v) > 0;
}

/** Where the connection's handshake stands when a message arrives (the core machine's phase). */
export type HandshakePhase = 'awaiting-init' | 'awaiting-ready' | 'established' | 'failed';

/**
 * Type → handshake phase → payload schema, for a message past the duplicate check: a handshake
 * message out of order is refused before its payload is read, so a handshake.ready before any
 * ack gets PROTOCOL_VIOLATION even without a session_id (spec: errors#order-of-checks, handshake#before-go).
 */
export function messageProblem(msg: Envelope, phase: HandshakePhase, version?: string): ErrorPayload | null {
  const type = msg.type;
  if (!isKnownType(type) || !isRequesterToAgent(type)) {
    return errorPayload('UNKNOWN_MESSAGE_TYPE', `an agent does not accept ${type}; the message had no effect`);
  }
  const since = messageEntry(type)?.since;
  if (version !== undefined && laterThan(since, version)) {
    return errorPayload(
      'UNKNOWN_MESSAGE_TYPE',
      `${type} is a message of TAP ${since}, and this session speaks ${version}; it had no effect`,
    );
  }
  if (type === 'error') return null;
  if (phase !== 'established' && !allowedBeforeHandshake(type)) {
    return errorPayload('HANDSHAKE_REQUIRED', `${type} arrived before handshake.go; it had no effect`);
  }
  const awaited = phase === 'awaiting-init' ? 'handshake.init' : phase === 'awaiting-ready' ? 'handshake.ready' : undefined;
  if ((type === 'handshake.init' || type === 'handshake.ready') && phase !== 'failed' && type !== awaited) {
    const when = awaited === undefined ? 'on an established session' : `while the handshake waits for ${awaited}`;
    return errorPayload('PROTOCOL_VIOLATION', `${type} arrived ${when}; it had no effect`, undefined, { fatal: false });
  }
  const issues = validateDecoded(msg);
  if (issues) {
    const first = issues[0]!;
    return errorPayload('INVALID_MESSAGE', `${type} is invalid: ${first.path || '/'} ${first.message}`, { issues });
  }
  return null;
}
