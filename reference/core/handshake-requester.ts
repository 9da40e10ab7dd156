/**
 * The requester side of the handshake as a pure state machine: start → handshake.init,
 * ack → handshake.ready, go → established (spec: handshake#overview).
 */
import type { AgentCard, MessageOf, PayloadOf, TapMessage } from '../../schemas/src/index.ts';
import { SUPPORTED_VERSIONS } from './catalogue.ts';
import { composeMessage } from './compose.ts';
import { errorPayload, isFatal, type ErrorCode, type ErrorPayload } from './errors.ts';
import {
  classifyEarly,
  identityProblem,
  pongFor,
  refusal,
  seal,
  signatureProblem,
  skewProblem,
  type EstablishedSession,
  type HandshakeEvent,
  type HandshakeStep,
  type SessionKey,
  type MachineContext,
  type Speaker,
} from './handshake.ts';
import { checkFinalParams, type ProposedParams } from './params.ts';
import { protocolOf } from './versions.ts';

/** What the requester's handshake needs to know; nothing here does I/O. */
export interface RequesterHandshakeConfig extends MachineContext {
  card: AgentCard;
  /** Every version the requester speaks; default SUPPORTED_VERSIONS (spec: handshake#init). */
  versions?: readonly string[];
  /** The agent's id when known; "*" otherwise (spec: envelope#source-and-target). */
  target?: string;
  requires?: string[];
  params?: ProposedParams;
  credentials?: PayloadOf<'handshake.init'>['credentials'];
  resume?: PayloadOf<'handshake.init'>['resume'];
  /** Propose hmac-sha256 with this pre-shared key; every message from init on is then signed (spec: integrity#negotiation). */
  integrity?: { keyId: string; key: Uint8Array };
}

/** The requester machine's state; start from initialRequesterHandshake(config) and feed { kind: 'start' }. */
export type RequesterHandshakeState =
  | { phase: 'idle'; config: RequesterHandshakeConfig }
  | { phase: 'awaiting-ack'; config: RequesterHandshakeConfig; init: MessageOf<'handshake.init'> }
  | { phase: 'awaiting-go'; config: RequesterHandshakeConfig; ready: MessageOf<'handshake.ready'>; pending: EstablishedSession }
  | { phase: 'established'; config: RequesterHandshakeConfig; session: EstablishedSession }
  | { phase: 'failed'; config: RequesterHandshakeConfig; error: ErrorPayload };

/** The clean state a requester's handshake starts (and restarts) from (spec: handshake#failures). */
export function initialRequesterHandshake(config: RequesterHandshakeConfig): RequesterHandshakeState {
  return { phase: 'idle', config };
}

type Step = HandshakeStep<RequesterHandshakeState>;

/**
 * Advances the requester's handshake by one event. An error answering init or ready ends the
 * attempt (closing only when it is fatal); a fresh initial state starts the next one. After go,
 * nothing is its business (`handled: false`) (spec: handshake#overview).
 */
export function requesterHandshake(state: RequesterHandshakeState, event: HandshakeEvent): Step {
  const { config } = state;
  if (event.kind === 'start') return state.phase === 'idle' ? start(config) : { state, send: [], handled: true };
  if (event.kind === 'timeout') {
    if (state.phase !== 'awaiting-ack' && state.phase !== 'awaiting-go') return { state, send: [], handled: true };
    const waited = state.phase === 'awaiting-ack' ? 'handshake.ack' : 'handshake.go';
    const error = errorPayload('PROTOCOL_VIOLATION', `the handshake timed out waiting for ${waited}`, { timeout: waited }, { fatal: true });
    return { state: { phase: 'failed', config, error }, send: [], error, close: true, handled: true };
  }
  const msg = event.message;
  switch (state.phase) {
    case 'idle':
    case 'failed':
      return { state, send: [], handled: true };
    case 'established':
      return { state, send: [], handled: false };
    case 'awaiting-ack':
      return awaitingAck(state, msg);
    case 'awaiting-go':
      return awaitingGo(state, msg);
  }
}

function start(config: RequesterHandshakeConfig): Step {
  const integrity = config.integrity ?? null;
  const params: ProposedParams = { ...config.params };
  if (integrity) params.integrity = { alg: 'hmac-sha256', key_id: integrity.keyId };
  const payload: PayloadOf<'handshake.init'> = {
    versions: [...(config.versions ?? SUPPORTED_VERSIONS)],
    agent: config.card,
    requires: config.requires ?? [],
    params,
  };
  if (config.credentials) payload.credentials = config.credentials;
  if (config.resume) payload.resume = config.resume;
  const init = seal(
    config,
    integrity,
    composeMessage(config, {
      type: 'handshake.init',
      source: config.card.agent_id,
      target: config.target ?? '*',
      payload,
    }),
  );
  return { state: { phase: 'awaiting-ack', config, init }, send: [init], handled: true };
}

/** Ends the attempt: a fatal error answering `offending`, then close. */
function abort(
  state: RequesterHandshakeState,
  who: Speaker,
  offending: TapMessage,
  code: ErrorCode,
  message: string,
  details?: Record<string, unknown>,
): Step {
  const r = refusal(state.config, who, offending, code, message, details, { fatal: true });
  return { state: { phase: 'failed', config: state.config, error: r.error }, send: [r.msg], error: r.error, close: true, handled: true };
}

/** The agent's error ends the attempt when it answers our pending request or is fatal; otherwise it is noted and dropped. */
function peerError(state: RequesterHandshakeState, msg: TapMessage, pendingId: string): Step {
  const error = msg.payload as ErrorPayload;
  if (msg.reply_to !== pendingId && !isFatal(error)) return { state, send: [], handled: true };
  return { state: { phase: 'failed', config: state.config, error }, send: [], error, close: isFatal(error), handled: true };
}

/** A message other than the one awaited, before go (spec: handshake#before-go). */
function early(state: RequesterHandshakeState, msg: TapMessage, who: Speaker, pendingId: string): Step {
  const kind = classifyEarly('requester', msg);
  if (kind === 'error') return peerError(state, msg, pendingId);
  if (kind === 'pong') return { state, send: [], handled: true };
  if (kind === 'ping') return { state, send: [pongFor(state.config, who, msg)], handled: true };
  const [code, text]: [ErrorCode, string] =
    kind === 'unknown-type'
      ? ['UNKNOWN_MESSAGE_TYPE', `a requester does not accept ${msg.type}`]
      : kind === 'handshake'
        ? ['PROTOCOL_VIOLATION', `${msg.type} arrived out of order`]
        : ['HANDSHAKE_REQUIRED', `${msg.type} arrived before handshake.go; it had no effect`];
  const r = refusal(state.config, who, msg, code, text, undefined, code === 'PROTOCOL_VIOLATION' ? { fatal: false } : undefined);
  return { state, send: [r.msg], error: r.error, handled: true };
}

/**
 * Before the ack nothing is bound and the key is not yet agreed, so only the ack itself must be
 * signed under integrity; the agent's refusal of our init is unsigned by rule (spec: integrity#unsigned-errors).
 */
function awaitingAck(state: Extract<RequesterHandshakeState, { phase: 'awaiting-ack' }>, msg: TapMessage): Step {
  const { config, init } = state;
  const integrity: SessionKey = config.integrity ?? null;
  const who: Speaker = { self: config.card.agent_id, integrity: null };
  if (msg.type !== 'handshake.ack') return early(state, msg, who, init.message_id);
  if (integrity) {
    // An ack that fails verification has no effect: the real one may still come (spec: integrity#verification).
    const bad = signatureProblem(config, msg, integrity.keyId, integrity.key);
    const problem = bad
      ? { code: 'INVALID_SIGNATURE' as const, message: bad }
      : (() => {
          const stale = skewProblem(config, msg);
          return stale ? { code: 'REPLAY_DETECTED' as const, message: stale } : null;
        })();
    if (problem) {
      const r = refusal(config, { ...who, integrity }, msg, problem.code, problem.message);
      return { state, send: [r.msg], error: r.error, handled: true };
    }
  }
  return onAck(state, msg);
}

/** handshake.ack: it answers our init, comes from the agent we asked, and fixes acceptable params; then ready (spec: handshake#ack). */
function onAck(state: Extract<RequesterHandshakeState, { phase: 'awaiting-ack' }>, ack: MessageOf<'handshake.ack'>): Step {
  const { config, init } = state;
  const self = config.card.agent_id;
  const integrity: SessionKey = config.integrity ?? null;
  const who: Speaker = { self, integrity };
  const p = ack.payload;
  if (ack.reply_to !== init.message_id)
    return abort(state, who, ack, 'PROTOCOL_VIOLATION', `handshake.ack answers ${ack.reply_to}, not handshake.init ${init.message_id}`);
  const expected = config.target && config.target !== '*' ? config.target : p.agent.agent_id;
  if (ack.source !== p.agent.agent_id || ack.source !== expected || ack.target !== self) {
    return abort(
      state,
      who,
      ack,
      'IDENTITY_MISMATCH',
      `handshake.ack from ${ack.source} (card ${p.agent.agent_id}) to ${ack.target}; expected ${expected} to ${self}`,
    );
  }
  if (ack.session_id !== undefined && ack.session_id !== p.session_id) {
    return abort(
      state,
      who,
      ack,
      'PROTOCOL_VIOLATION',
      `handshake.ack names session ${ack.session_id} in its envelope and ${p.session_id} in its payload`,
    );
  }
  const versions = config.versions ?? SUPPORTED_VERSIONS;
  if (!versions.includes(p.version)) {
    return abort(state, who, ack, 'UNSUPPORTED_VERSION', `the agent chose ${p.version}, which this requester does not speak`, {
      supported: [...versions],
    });
  }
  const problems = checkFinalParams(init.payload.params, p.params);
  if (problems.length > 0)
    return abort(state, who, ack, 'PROTOCOL_VIOLATION', `handshake.ack fixes unacceptable params: ${problems[0]}`, { problems });
  if (p.resumed && (!config.resume || config.resume.session_id !== p.session_id)) {
    return abort(state, who, ack, 'PROTOCOL_VIOLATION', `handshake.ack resumes session ${p.session_id}, which was not asked for`);
  }
  const protocol = protocolOf(p.version);
  const pending: EstablishedSession = {
    role: 'requester',
    version: p.version,
    protocol,
    sessionId: p.session_id,
    resumeToken: p.resume_token,
    resumed: p.resumed,
    params: p.params,
    local: config.card,
    peer: p.agent,
    integrity,
    granted: p.granted,
    missing: p.missing,
    extensions: p.extensions ?? [],
    resumeWindowMs: p.resume_window_ms,
    maxRetainedMessages: p.max_retained_messages,
  };
  const ready = seal(
    config,
    integrity,
    composeMessage(
      { ...config, protocol },
      {
        type: 'handshake.ready',
        source: self,
        target: ack.source,
        session_id: p.session_id,
        payload: { params: p.params },
      },
    ),
  );
  return { state: { phase: 'awaiting-go', config, ready, pending }, send: [ready], handled: true };
}

/** After the ack every message is bound to the session: signature, skew, identity and session, then phase (spec: errors#order-of-checks). */
function awaitingGo(state: Extract<RequesterHandshakeState, { phase: 'awaiting-go' }>, msg: TapMessage): Step {
  const { config, ready, pending } = state;
  const who: Speaker = { self: config.card.agent_id, sessionId: pending.sessionId, integrity: pending.integrity };
  const ctx = { ...config, protocol: pending.protocol };
  // A message that fails these checks has no effect; it is refused, unless it is an error,
  // which nothing answers (spec: errors#no-replies-to-errors).
  const refuse = (code: ErrorCode, message: string): Step => {
    if (msg.type === 'error') return { state, send: [], handled: true };
    const r = refusal(ctx, who, msg, code, message);
    return { state, send: [r.msg], error: r.error, handled: true };
  };
  if (pending.integrity) {
    const bad = signatureProblem(config, msg, pending.integrity.keyId, pending.integrity.key);
    if (bad) return refuse('INVALID_SIGNATURE', bad);
    const stale = skewProblem(config, msg);
    if (stale) return refuse('REPLAY_DETECTED', stale);
  }
  const wrong = identityProblem(msg, who.self, pending.peer.agent_id, pending.sessionId, pending.integrity !== null);
  if (wrong) return refuse(wrong.code, wrong.message);
  if (msg.type !== 'handshake.go') return early(state, msg, who, ready.message_id);
  if (msg.reply_to !== ready.message_id) {
    return abort(state, who, msg, 'PROTOCOL_VIOLATION', `handshake.go answers ${msg.reply_to}, not handshake.ready ${ready.message_id}`);
  }
  return { state: { phase: 'established', config, session: pending }, send: [], session: pending, handled: true };
}
