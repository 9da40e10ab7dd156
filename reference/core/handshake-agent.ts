/**
 * The agent side of the handshake as a pure state machine: handshake.init → ack (or a refusal),
 * handshake.ready → go (spec: handshake#overview).
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
  type AuthenticatedCredentials,
  type CredentialAuthority,
  type EstablishedSession,
  type HandshakeEvent,
  type HandshakeStep,
  type KeyEntry,
  type MachineContext,
  type Speaker,
} from './handshake.ts';
import { newResumeToken, newSessionId, webRandom } from './ids.ts';
import { agentDefaults, confirmsParams, DEFAULT_RESUME_WINDOW_MS, negotiateParams, type AgentParamDefaults } from './params.ts';
import { type Extension, negotiateExtensions, negotiatesExtensions } from './extensions.ts';
import { cardForVersion } from './reserved-names.ts';
import { chooseVersion, protocolOf } from './versions.ts';

type Credentials = NonNullable<PayloadOf<'handshake.init'>['credentials']>;
type ResumeRequest = NonNullable<PayloadOf<'handshake.init'>['resume']>;

/** What the agent's handshake needs to know; nothing here does I/O. */
export interface AgentHandshakeConfig extends MachineContext {
  card: AgentCard;
  /** Versions the agent speaks; default SUPPORTED_VERSIONS. */
  supportedVersions?: readonly string[];
  /** Overrides of the defaults derived from the card's limits (spec: handshake#params). */
  params?: Partial<AgentParamDefaults>;
  resumeWindowMs?: number;
  /** Messages retained per task for resume; default 1000 (spec: resume#retention). */
  maxRetainedMessages?: number;
  /** Pre-shared keys by key_id, each bound to one peer agent id (spec: integrity#keys). */
  keys?: ReadonlyMap<string, KeyEntry>;
  /** Refuse a handshake without valid credentials (AUTH_REQUIRED) (spec: handshake#credentials). */
  requireCredentials?: boolean;
  /**
   * Authenticates credentials: the principal they prove, or null (or `{ refused }`, saying why)
   * to refuse them with AUTH_REQUIRED.
   */
  verifyCredentials?: (credentials: Credentials, peer: AgentCard) => string | AuthenticatedCredentials | null | { refused: string };
  /**
   * The principal the binding authenticated for this connection (a verified client certificate);
   * credentials, when given, take its place (spec: authorization#principals).
   */
  bindingPrincipal?: string;
  /**
   * Decides a resume: true only when that session exists and has not ended, belongs to
   * `principal`, and has that resume_token (spec: resume#reconnect).
   */
  resume?: (request: ResumeRequest & { principal: string; peer: string; version: string }) => boolean;
  /** The extensions the agent supports, those it requires marked `required` (spec: handshake#negotiated-extensions). */
  extensions?: readonly Extension[];
}

/** The agent machine's state; start from initialAgentHandshake(config). */
export type AgentHandshakeState =
  | { phase: 'awaiting-init'; config: AgentHandshakeConfig }
  | {
      phase: 'awaiting-ready';
      config: AgentHandshakeConfig;
      pending: EstablishedSession;
      init: MessageOf<'handshake.init'>;
      ack: MessageOf<'handshake.ack'>;
    }
  | {
      phase: 'established';
      config: AgentHandshakeConfig;
      session: EstablishedSession;
      init: MessageOf<'handshake.init'>;
      ack: MessageOf<'handshake.ack'>;
      readyId: string;
      go: MessageOf<'handshake.go'>;
    }
  | { phase: 'failed'; config: AgentHandshakeConfig; error: ErrorPayload };

/** The clean state an agent's handshake starts (and restarts) from (spec: handshake#failures). */
export function initialAgentHandshake(config: AgentHandshakeConfig): AgentHandshakeState {
  if (config.requireCredentials && !config.verifyCredentials) throw new Error('requireCredentials needs a verifyCredentials function');
  return { phase: 'awaiting-init', config };
}

type Step = HandshakeStep<AgentHandshakeState>;
type Bound = Extract<AgentHandshakeState, { phase: 'awaiting-ready' | 'established' }>;

/**
 * Advances the agent's handshake by one event. After go, only handshake.init and
 * handshake.ready are its business (`handled: false` for the rest) (spec: handshake#overview).
 */
export function agentHandshake(state: AgentHandshakeState, event: HandshakeEvent): Step {
  const { config } = state;
  if (event.kind === 'start') return { state, send: [], handled: true };
  if (event.kind === 'timeout') {
    if (state.phase !== 'awaiting-init' && state.phase !== 'awaiting-ready') return { state, send: [], handled: true };
    const waited = state.phase === 'awaiting-init' ? 'handshake.init' : 'handshake.ready';
    const error = errorPayload('PROTOCOL_VIOLATION', `the handshake timed out waiting for ${waited}`, { timeout: waited }, { fatal: true });
    return { state: { phase: 'failed', config, error }, send: [], error, close: true, handled: true };
  }
  const msg = event.message;
  switch (state.phase) {
    case 'failed':
      return { state, send: [], handled: true };
    case 'awaiting-init':
      if (msg.type === 'handshake.init') return onInit(state, msg);
      return early(state, msg, { self: config.card.agent_id, integrity: null }, 'handshake.init');
    case 'awaiting-ready':
    case 'established':
      return bound(state, msg);
  }
}

/** Checks after the ack, in the order of checks: signature, duplicate, skew, identity and session, then phase (spec: errors#order-of-checks). */
function bound(state: Bound, msg: TapMessage): Step {
  const { config } = state;
  const session = state.phase === 'established' ? state.session : state.pending;
  const who: Speaker = { self: config.card.agent_id, sessionId: session.sessionId, integrity: session.integrity };
  const ctx = { ...config, protocol: session.protocol };
  const handshakeType = msg.type === 'handshake.init' || msg.type === 'handshake.ready';
  if (state.phase === 'established' && !handshakeType) return { state, send: [], handled: false };
  const refuse = (code: ErrorCode, message: string): Step => {
    if (msg.type === 'error') return { state, send: [], handled: true }; // no effect, and nothing answers an error
    const r = refusal(ctx, who, msg, code, message, undefined, code === 'PROTOCOL_VIOLATION' ? { fatal: false } : undefined);
    return { state, send: [r.msg], error: r.error, handled: true };
  };
  if (session.integrity) {
    const bad = signatureProblem(config, msg, session.integrity.keyId, session.integrity.key);
    if (bad) return refuse('INVALID_SIGNATURE', bad);
  }
  // A duplicate, even of a handshake message, gets the original reply byte for byte (spec: idempotency#duplicate-messages).
  if (msg.source === session.peer.agent_id) {
    if (msg.message_id === state.init.message_id && msg.type === 'handshake.init') return { state, send: [state.ack], handled: true };
    if (state.phase === 'established' && msg.message_id === state.readyId) return { state, send: [state.go], handled: true };
  }
  if (session.integrity) {
    const stale = skewProblem(config, msg);
    if (stale) return refuse('REPLAY_DETECTED', stale);
  }
  // A later init is judged as one: it may name "*" and no session, and is then out of order (spec: handshake#before-go).
  const wrong =
    msg.type === 'handshake.init'
      ? identityProblem(
          { ...msg, target: msg.target === '*' ? who.self : msg.target, session_id: session.sessionId },
          who.self,
          session.peer.agent_id,
          session.sessionId,
          false,
        )
      : identityProblem(msg, who.self, session.peer.agent_id, session.sessionId, session.integrity !== null);
  if (wrong) return refuse(wrong.code, wrong.message);
  if (state.phase === 'awaiting-ready' && msg.type === 'handshake.ready') return onReady(state, msg);
  if (handshakeType)
    return refuse(
      'PROTOCOL_VIOLATION',
      `${msg.type} arrived ${state.phase === 'established' ? 'on an established session' : 'while the handshake waits for handshake.ready'}`,
    );
  return early(state, msg, who, 'handshake.ready', ctx);
}

/** A message other than the one awaited, before go (spec: handshake#before-go). */
function early(state: AgentHandshakeState, msg: TapMessage, who: Speaker, awaited: string, ctx: MachineContext = state.config): Step {
  const { config } = state;
  const kind = classifyEarly('agent', msg);
  if (kind === 'error') {
    // Nothing answers an error; a fatal one from the requester ends the attempt (spec: errors#no-replies-to-errors).
    const error = msg.payload as ErrorPayload;
    if (!isFatal(error)) return { state, send: [], handled: true };
    return { state: { phase: 'failed', config, error }, send: [], error, close: true, handled: true };
  }
  if (kind === 'pong') return { state, send: [], handled: true };
  if (kind === 'ping') return { state, send: [pongFor(ctx, who, msg)], handled: true };
  const [code, text]: [ErrorCode, string] =
    kind === 'unknown-type'
      ? ['UNKNOWN_MESSAGE_TYPE', `an agent does not accept ${msg.type}`]
      : kind === 'handshake'
        ? ['PROTOCOL_VIOLATION', `${msg.type} arrived while the handshake waits for ${awaited}`]
        : ['HANDSHAKE_REQUIRED', `${msg.type} arrived before handshake.go; it had no effect`];
  const r = refusal(ctx, who, msg, code, text, undefined, code === 'PROTOCOL_VIOLATION' ? { fatal: false } : undefined);
  return { state, send: [r.msg], error: r.error, handled: true };
}

/**
 * handshake.init, in the order of checks: signature and skew under a held key, then a common
 * version, the card's identity, and credentials and key binding; then the ack (spec: errors#order-of-checks).
 */
function onInit(state: Extract<AgentHandshakeState, { phase: 'awaiting-init' }>, init: MessageOf<'handshake.init'>): Step {
  const { config } = state;
  const self = config.card.agent_id;
  const p = init.payload;
  const proposed = p.params.integrity ?? 'none';
  const signed = proposed !== 'none';
  const who: Speaker = { self, integrity: null };
  // Errors answering an init that proposed integrity are unsigned and fatal (spec: integrity#unsigned-errors).
  const fail = (code: ErrorCode, message: string, details?: Record<string, unknown>, fatal = true): Step => {
    const r = refusal(config, who, init, code, message, details, { fatal: fatal || signed });
    if (!(fatal || signed)) return { state, send: [r.msg], error: r.error, handled: true };
    return { state: { phase: 'failed', config, error: r.error }, send: [r.msg], error: r.error, close: true, handled: true };
  };

  const entry = signed ? config.keys?.get(proposed.key_id) : undefined;
  if (signed && entry) {
    const bad = signatureProblem(config, init, proposed.key_id, entry.key);
    if (bad) return fail('INVALID_SIGNATURE', bad);
    const stale = skewProblem(config, init);
    if (stale) return fail('REPLAY_DETECTED', stale);
  }

  const supported = config.supportedVersions ?? SUPPORTED_VERSIONS;
  const version = chooseVersion(p.versions, supported);
  if (!version) {
    return fail(
      'UNSUPPORTED_VERSION',
      `no common version: the requester speaks ${p.versions.join(', ')}, this agent ${supported.join(', ')}`,
      { supported: [...supported] },
    );
  }

  const peerId = p.agent.agent_id;
  if (init.source !== peerId)
    return fail('IDENTITY_MISMATCH', `source ${init.source} differs from the card's agent_id ${peerId}`, undefined, false);
  if (init.target !== '*' && init.target !== self)
    return fail('IDENTITY_MISMATCH', `target ${init.target} is not this agent (${self})`, undefined, false);

  let principal: string | undefined;
  let authority: CredentialAuthority | undefined;
  if (p.credentials && config.verifyCredentials) {
    const who = config.verifyCredentials(p.credentials, p.agent);
    if (who === null) return fail('AUTH_REQUIRED', `the ${p.credentials.scheme} credentials were refused`);
    if (typeof who === 'object' && 'refused' in who)
      return fail('AUTH_REQUIRED', `the ${p.credentials.scheme} credentials were refused: ${who.refused}`);
    if (typeof who === 'string') principal = who;
    else {
      ({ principal, ...authority } = who);
    }
  } else if (config.requireCredentials && config.bindingPrincipal === undefined) {
    return fail('AUTH_REQUIRED', 'this agent requires credentials');
  }
  principal ??= config.bindingPrincipal;
  let integrity: EstablishedSession['integrity'] = null;
  if (signed) {
    if (!entry) return fail('AUTH_REQUIRED', `this agent holds no key ${proposed.key_id}`, { key_id: proposed.key_id });
    if (entry.peer !== peerId)
      return fail('AUTH_REQUIRED', `key ${proposed.key_id} is not bound to ${peerId}`, { key_id: proposed.key_id });
    integrity = { keyId: proposed.key_id, key: entry.key };
    principal ??= entry.principal ?? `agent:${entry.peer}`;
  } else {
    for (const [keyId, held] of config.keys ?? []) {
      if (held.peer === peerId)
        return fail('AUTH_REQUIRED', `this agent holds key ${keyId} for ${peerId} and refuses integrity "none"`, { key_id: keyId });
    }
  }

  // A session of 1.1 uses the extensions both cards list; a required one the other side lacks ends the handshake (spec: handshake#negotiated-extensions).
  const supportedExtensions = config.extensions ?? [];
  const withExtensions = negotiatesExtensions(version);
  const { accepted, missing: lacking } = withExtensions
    ? negotiateExtensions(p.agent.extensions, supportedExtensions)
    : { accepted: [], missing: [] };
  if (lacking.length) {
    return fail(
      'EXTENSION_REQUIRED',
      `required extensions not supported by both sides: ${lacking.join(', ')}; offer in your card's extensions those the agent requires, and require only those it lists`,
      { missing: lacking, extensions: supportedExtensions.map((e) => ({ ...e })) },
      false,
    );
  }

  const random = config.random ?? webRandom;
  let sessionId = newSessionId(random);
  let resumeToken = newResumeToken(random);
  let resumed = false;
  if (p.resume && config.resume?.({ ...p.resume, principal: principal ?? `session:${p.resume.session_id}`, peer: peerId, version })) {
    sessionId = p.resume.session_id;
    resumeToken = p.resume.resume_token;
    resumed = true;
  }

  const card = cardForVersion(config.card, version);
  const offered = new Set(card.capabilities.map((c) => c.name));
  const granted = p.requires.filter((c) => offered.has(c));
  const missing = p.requires.filter((c) => !offered.has(c));
  const params = negotiateParams(p.params, agentDefaults(config.card, config.params));
  const resumeWindowMs = config.resumeWindowMs ?? DEFAULT_RESUME_WINDOW_MS;
  const maxRetainedMessages = config.maxRetainedMessages ?? 1000;
  const protocol = protocolOf(version);
  const ack = seal(
    config,
    integrity,
    composeMessage(
      { ...config, protocol },
      {
        type: 'handshake.ack',
        source: self,
        target: peerId,
        reply_to: init.message_id,
        session_id: sessionId,
        payload: {
          version,
          session_id: sessionId,
          resume_token: resumeToken,
          resumed,
          agent: withExtensions && supportedExtensions.length ? { ...card, extensions: supportedExtensions.map((e) => ({ ...e })) } : card,
          granted,
          missing,
          params,
          resume_window_ms: resumeWindowMs,
          max_retained_messages: maxRetainedMessages,
          ...(withExtensions ? { extensions: accepted } : {}),
        },
      },
    ),
  );
  // The ack is read under the requester's card limit; one that cannot fit creates no session (spec: limits#ack-size).
  const ackBytes = new TextEncoder().encode(JSON.stringify(ack)).byteLength;
  const readable = p.agent.limits.max_message_bytes;
  if (ackBytes > readable) {
    return fail(
      'MESSAGE_TOO_LARGE',
      `the handshake.ack has ${ackBytes} bytes and the requester's card accepts ${readable}; offer a card limit of at least ${ackBytes}`,
      { max_message_bytes: readable, byte_length: ackBytes },
      false,
    );
  }
  const pending: EstablishedSession = {
    role: 'agent',
    version,
    protocol,
    sessionId,
    resumeToken,
    resumed,
    params,
    local: config.card,
    peer: p.agent,
    principal: principal ?? `session:${sessionId}`,
    ...(authority ? { authority } : {}),
    integrity,
    granted,
    missing,
    extensions: accepted,
    resumeWindowMs,
    maxRetainedMessages,
    ...(resumed && p.resume ? { resumeTasks: p.resume.tasks } : {}),
  };
  return { state: { phase: 'awaiting-ready', config, pending, init, ack }, send: [ack], handled: true };
}

/** handshake.ready must confirm every member of the ack's params; then go (spec: handshake#ready). */
function onReady(state: Extract<AgentHandshakeState, { phase: 'awaiting-ready' }>, ready: MessageOf<'handshake.ready'>): Step {
  const { config, pending } = state;
  const who: Speaker = { self: config.card.agent_id, sessionId: pending.sessionId, integrity: pending.integrity };
  const ctx = { ...config, protocol: pending.protocol };
  if (!confirmsParams(ready.payload.params, pending.params)) {
    const r = refusal(ctx, who, ready, 'PROTOCOL_VIOLATION', 'handshake.ready does not confirm the params of handshake.ack', undefined, {
      fatal: true,
    });
    return { state: { phase: 'failed', config, error: r.error }, send: [r.msg], error: r.error, close: true, handled: true };
  }
  const go = seal(
    config,
    pending.integrity,
    composeMessage(ctx, {
      type: 'handshake.go',
      source: who.self,
      target: ready.source,
      reply_to: ready.message_id,
      session_id: pending.sessionId,
      payload: {},
    }),
  );
  const next: AgentHandshakeState = {
    phase: 'established',
    config,
    session: pending,
    init: state.init,
    ack: state.ack,
    readyId: ready.message_id,
    go,
  };
  return { state: next, send: [go], session: pending, handled: true };
}
