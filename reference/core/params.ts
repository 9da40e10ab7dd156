/**
 * Session parameters: the agent's defaults, the negotiation rule that turns a proposal into the
 * final params, and the requester's check of what the agent fixed (spec: handshake#params).
 */
import type { AgentCard, PayloadOf } from '../../schemas/src/index.ts';
import { canonicalize } from './jcs.ts';

/** The final session parameters, as in handshake.ack and handshake.ready (spec: handshake#params). */
export type SessionParams = PayloadOf<'handshake.ready'>['params'];
/** The parameters a requester proposes in handshake.init; an omitted one takes the agent's value. */
export type ProposedParams = PayloadOf<'handshake.init'>['params'];
/** "none", or the MAC and key every message is signed with (spec: integrity#negotiation). */
export type Integrity = SessionParams['integrity'];

/** The values an agent uses where the requester proposes none, and the ceilings it can honour. */
export interface AgentParamDefaults {
  heartbeat_ms: number;
  max_message_bytes: number;
  max_concurrent_tasks: number;
  request_timeout_ms: number;
  /** Whether the agent streams output events at all. */
  streaming: boolean;
}

/** The smallest heartbeat a session may use (spec: limits#heartbeats). */
export const HEARTBEAT_MIN_MS = 1000;
/** The largest heartbeat a session may use (spec: limits#heartbeats). */
export const HEARTBEAT_MAX_MS = 60000;
/** Default max_message_bytes: 1 MiB (spec: limits#message-size). */
export const DEFAULT_MAX_MESSAGE_BYTES = 1048576;
/** Default time a session stays resumable after losing its transport (spec: resume#orphans). */
export const DEFAULT_RESUME_WINDOW_MS = 300000;
/** Default time each handshake step may take (spec: handshake#timeouts). */
export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 10000;
/** Default skew window for signed messages (spec: integrity#skew). */
export const DEFAULT_SKEW_MS = 300000;

/** Defaults for an agent that states nothing else. */
export const DEFAULT_PARAMS: Readonly<AgentParamDefaults> = {
  heartbeat_ms: 15000,
  max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
  max_concurrent_tasks: 16,
  request_timeout_ms: 30000,
  streaming: true,
};

/** An agent's defaults derived from its card's limits, overridden by `overrides` (spec: handshake#params). */
export function agentDefaults(card: AgentCard, overrides: Partial<AgentParamDefaults> = {}): AgentParamDefaults {
  return {
    ...DEFAULT_PARAMS,
    max_message_bytes: card.limits.max_message_bytes,
    max_concurrent_tasks: card.limits.max_tasks_per_session ?? card.limits.max_concurrent_tasks,
    ...overrides,
  };
}

/** Clamps a heartbeat into [1000, 60000] ms (spec: limits#heartbeats). */
export function clampHeartbeat(ms: number): number {
  return Math.min(HEARTBEAT_MAX_MS, Math.max(HEARTBEAT_MIN_MS, ms));
}

/**
 * The final params: limits are the smaller of both sides, heartbeat_ms the larger (then clamped),
 * request_timeout_ms the requester's, streaming only if both want it, integrity as proposed
 * (the handshake refuses what it cannot honour, it never downgrades) (spec: handshake#params).
 */
export function negotiateParams(proposed: ProposedParams, agent: AgentParamDefaults): SessionParams {
  const min = (p: number | undefined, a: number) => (p === undefined ? a : Math.min(p, a));
  return {
    heartbeat_ms: clampHeartbeat(Math.max(proposed.heartbeat_ms ?? agent.heartbeat_ms, agent.heartbeat_ms)),
    max_message_bytes: min(proposed.max_message_bytes, agent.max_message_bytes),
    max_concurrent_tasks: min(proposed.max_concurrent_tasks, agent.max_concurrent_tasks),
    request_timeout_ms: proposed.request_timeout_ms ?? agent.request_timeout_ms,
    streaming: (proposed.streaming ?? agent.streaming) && agent.streaming,
    integrity: normalizeIntegrity(proposed.integrity),
  };
}

/** "none" for an absent proposal; otherwise just { alg, key_id } (spec: integrity#negotiation). */
export function normalizeIntegrity(integrity: Integrity | undefined): Integrity {
  if (integrity === undefined || integrity === 'none') return 'none';
  return { alg: integrity.alg, key_id: integrity.key_id };
}

/**
 * True when the params of a handshake.ready confirm the final ones: every member of `final` is
 * present in `ready` with the same RFC 8785 canonical form; members `final` does not have are
 * ignored, as unknown members always are (spec: handshake#ready, envelope#extensibility).
 */
export function confirmsParams(ready: unknown, final: SessionParams): boolean {
  if (ready === null || typeof ready !== 'object' || Array.isArray(ready)) return false;
  const got = ready as Record<string, unknown>;
  return Object.entries(final).every(([name, value]) => Object.hasOwn(got, name) && sameParams(got[name], value));
}

/** True when two JSON values are identical in RFC 8785 form (spec: handshake#ready). */
export function sameParams(a: unknown, b: unknown): boolean {
  try {
    return canonicalize(a) === canonicalize(b);
  } catch {
    return false;
  }
}

/**
 * What is wrong with the final params an agent returned for a proposal: a raised limit, a shorter
 * heartbeat, a changed request timeout, streaming turned on, or integrity changed. Empty when
 * they are acceptable (spec: handshake#params).
 */
export function checkFinalParams(proposed: ProposedParams, final: SessionParams): string[] {
  const problems: string[] = [];
  if (proposed.max_message_bytes !== undefined && final.max_message_bytes > proposed.max_message_bytes) {
    problems.push(`max_message_bytes ${final.max_message_bytes} exceeds the proposed ${proposed.max_message_bytes}`);
  }
  if (proposed.max_concurrent_tasks !== undefined && final.max_concurrent_tasks > proposed.max_concurrent_tasks) {
    problems.push(`max_concurrent_tasks ${final.max_concurrent_tasks} exceeds the proposed ${proposed.max_concurrent_tasks}`);
  }
  if (final.heartbeat_ms < HEARTBEAT_MIN_MS || final.heartbeat_ms > HEARTBEAT_MAX_MS) {
    problems.push(`heartbeat_ms ${final.heartbeat_ms} lies outside [${HEARTBEAT_MIN_MS}, ${HEARTBEAT_MAX_MS}]`);
  } else if (proposed.heartbeat_ms !== undefined && final.heartbeat_ms < clampHeartbeat(proposed.heartbeat_ms)) {
    problems.push(`heartbeat_ms ${final.heartbeat_ms} is below the proposed ${proposed.heartbeat_ms}`);
  }
  if (proposed.request_timeout_ms !== undefined && final.request_timeout_ms !== proposed.request_timeout_ms) {
    problems.push(`request_timeout_ms ${final.request_timeout_ms} differs from the proposed ${proposed.request_timeout_ms}`);
  }
  if (proposed.streaming === false && final.streaming) problems.push('streaming is on although the requester proposed false');
  if (!sameParams(normalizeIntegrity(proposed.integrity), final.integrity)) {
    problems.push(
      `integrity ${JSON.stringify(final.integrity)} differs from the proposed ${JSON.stringify(normalizeIntegrity(proposed.integrity))}`,
    );
  }
  return problems;
}
