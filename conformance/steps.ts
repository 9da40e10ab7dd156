/**
 * The steps cases are made of: the four-step handshake, a task request, collecting a task's
 * stream up to its result. Each returns the agent's messages or the outcome that explains why
 * they did not come (spec: handshake, tasks).
 */
import { SUPPORTED_VERSIONS } from '../reference/core/catalogue.ts';
import type { Peer, Received } from './peer.ts';
import { describeIssues, validateAgainst, validateMessage } from './schemas.ts';
import type { Wire } from './session-state.ts';
import { fail, got, miss, type Got } from './verdict.ts';

/** The harness's agent card: a requester with no capabilities. */
export function harnessCard(agentId: string): Record<string, unknown> {
  return {
    agent_id: agentId,
    name: 'tap-conform',
    description:
      'The TAP 1.1 and 1.0 conformance harness: a requester that checks an agent against the specification. It performs no tasks.',
    capabilities: [],
    limits: { max_concurrent_tasks: 64, max_task_seconds: 3600, max_message_bytes: 1048576 },
  };
}

/** The versions the harness speaks and offers unless a case says otherwise (spec: versioning#tap-1-1). */
export const HARNESS_VERSIONS: readonly string[] = SUPPORTED_VERSIONS;

/** Session params the harness proposes unless a case says otherwise. */
export const DEFAULT_PARAMS = {
  heartbeat_ms: 30000,
  max_message_bytes: 1048576,
  max_concurrent_tasks: 16,
  request_timeout_ms: 30000,
  streaming: true,
};

export interface HandshakeOptions {
  versions?: string[];
  requires?: string[];
  /** Proposed params, merged over DEFAULT_PARAMS (a key set to undefined is left out). */
  params?: Record<string, unknown>;
  credentials?: { scheme: string; token?: string };
  resume?: { session_id: string; resume_token: string; tasks: { task_id: string; last_sequence: number }[] };
  /** Propose HMAC integrity with the run's key (the peer must have been opened signed). */
  integrity?: boolean;
  /** The init's target (default "*"). */
  target?: string;
  /** Replaces the harness card. */
  card?: Record<string, unknown>;
  /** Changes the params echoed in handshake.ready (to test a mismatch). */
  readyParams?: (p: Record<string, unknown>) => Record<string, unknown>;
  /** Stop after the ack (no ready, no go). */
  stopAfterAck?: boolean;
}

export interface Established {
  init: Wire;
  ack: Received;
  ready?: Wire;
  go?: Received;
}

/** What an `error` reply says, for people. */
export function describeError(m: Wire): string {
  const p = m.payload ?? {};
  return `error ${p.code}${p.message ? ` ("${String(p.message).slice(0, 160)}")` : ''}`;
}

/** One line naming a received message: its type, or its error code. */
export function describeMessage(m: Wire | undefined): string {
  if (!m) return 'nothing';
  if (m.type === 'error') return describeError(m);
  if (m.type === 'task.result') return `task.result ${m.payload?.status}${m.payload?.error ? ` (${m.payload.error.code})` : ''}`;
  if (m.type === 'task.snapshot') return `task.snapshot (state ${m.payload?.state})`;
  return m.type;
}

/** Builds the handshake.init payload from options. */
export function initPayload(peer: Peer, o: HandshakeOptions): Record<string, unknown> {
  const params: Record<string, unknown> = { ...DEFAULT_PARAMS, ...(o.params ?? {}) };
  for (const k of Object.keys(params)) if (params[k] === undefined) delete params[k];
  if (o.integrity && peer.state.integrity) params.integrity = { alg: 'hmac-sha256', key_id: peer.state.integrity.keyId };
  else if (params.integrity === undefined) params.integrity = 'none';
  const payload: Record<string, unknown> = {
    versions: o.versions ?? [...HARNESS_VERSIONS],
    agent: o.card ?? harnessCard(peer.state.selfId),
    requires: o.requires ?? [],
    params,
  };
  const credentials = o.credentials ?? peer.state.credentials;
  if (credentials) payload.credentials = credentials;
  if (o.resume) payload.resume = o.resume;
  return payload;
}

/** The principal a handshake authenticates, when sessions share it: by credentials, or by the run's key (spec: authorization#principals). */
function principalOf(peer: Peer, o: HandshakeOptions): string | undefined {
  if (o.credentials) return `credentials ${o.credentials.scheme} ${o.credentials.token ?? ''}`;
  if (o.integrity && peer.state.integrity) return `key ${peer.state.integrity.keyId}`;
  return undefined;
}

/** Why a handshake.ack fails its schema, for people (envelope and payload together); null when it is valid. */
export function invalidAck(ack: Wire): string | null {
  const issues = validateMessage(ack) && (validateAgainst('handshake.ack.schema.json', ack) ?? validateMessage(ack));
  return issues ? `the agent's handshake.ack is invalid against schemas/v1: ${describeIssues(issues, 3, ack)}` : null;
}

/**
 * Runs the handshake: init → ack → ready → go. Fails (as a value) if the agent refuses, stays
 * silent or sends an invalid ack; records the session id, agent id, version and params in the
 * peer's session state.
 */
export async function handshake(peer: Peer, o: HandshakeOptions = {}): Promise<Got<Established>> {
  const proposal = initPayload(peer, o);
  const init = await peer.post('handshake.init', proposal, o.target ? { target: o.target } : {});
  const ackR = await peer.reply(init);
  if (!ackR.ok) return ackR;
  const ack = ackR.value;
  if (ack.msg.type !== 'handshake.ack') {
    return miss(fail(`the agent refused the handshake: ${describeMessage(ack.msg)}`, 'handshake.ack', describeMessage(ack.msg)));
  }
  // An invalid ack ends the handshake at once: a ready would echo the agent's invalid values back
  // as the harness's own, and the fault is the agent's (spec: conformance#verdicts, TAP-CONF-002).
  const invalid = invalidAck(ack.msg);
  if (invalid)
    return miss(fail(`${invalid}; the handshake stops there`, 'a handshake.ack valid against its schema', 'an invalid handshake.ack'));
  const p = ack.msg.payload;
  const s = peer.state;
  s.sessionId = typeof p.session_id === 'string' ? p.session_id : undefined;
  s.resumeToken = typeof p.resume_token === 'string' ? p.resume_token : s.resumeToken;
  s.version = typeof p.version === 'string' ? p.version : '1.0';
  s.params = p.params;
  s.card = p.agent;
  const proposed = (proposal.params as Record<string, unknown>).max_concurrent_tasks;
  s.proposedConcurrency = typeof proposed === 'number' ? proposed : undefined;
  s.resumeWindowMs = typeof p.resume_window_ms === 'number' ? p.resume_window_ms : undefined;
  // A resumed session keeps its principal (spec: authorization#principals).
  if (!o.resume) s.principal = principalOf(peer, o);
  if (typeof p.agent?.agent_id === 'string') s.agentId = p.agent.agent_id;
  // From the ack on, every message of the session carries session_id (spec: envelope#session-id).
  s.bound = true;
  if (o.stopAfterAck) return got({ init, ack: ack });
  const readyParams = o.readyParams ? o.readyParams(p.params ?? {}) : p.params;
  const ready = await peer.post(
    'handshake.ready',
    { params: readyParams },
    {},
    o.readyParams ? { deliberate: 'ready params differ from the ack' } : {},
  );
  const goR = await peer.reply(ready);
  if (!goR.ok) return goR;
  if (goR.value.msg.type !== 'handshake.go') {
    return miss(
      fail(`the agent did not complete the handshake: ${describeMessage(goR.value.msg)}`, 'handshake.go', describeMessage(goR.value.msg)),
    );
  }
  s.established = true;
  return got({ init, ack, ready, go: goR.value });
}

export interface RequestOptions {
  taskId?: string;
  idempotencyKey?: string;
  authorization?: Record<string, unknown>;
  timeoutMs?: number;
  deadline?: string;
  /** Extra envelope members. */
  extra?: Partial<Wire>;
}

/** Sends a task.request and returns it with the agent's direct reply (accepted, snapshot or error). */
export async function request(
  peer: Peer,
  capability: string,
  input: unknown,
  o: RequestOptions = {},
): Promise<{ sent: Wire; reply: Got<Received> }> {
  const payload: Record<string, unknown> = { capability, input };
  if (o.authorization) payload.authorization = o.authorization;
  if (o.timeoutMs !== undefined) payload.timeout_ms = o.timeoutMs;
  const extra: Partial<Wire> = { task_id: o.taskId ?? peer.ids.task(), ...(o.extra ?? {}) };
  if (o.idempotencyKey) extra.idempotency_key = o.idempotencyKey;
  if (o.deadline) extra.deadline = o.deadline;
  const sent = await peer.post('task.request', payload, extra);
  return { sent, reply: await peer.reply(sent) };
}

/** Starts a task and expects task.accepted; anything else ends the case as a FAIL. */
export async function startTask(
  peer: Peer,
  capability: string,
  input: unknown,
  o: RequestOptions = {},
): Promise<Got<{ taskId: string; sent: Wire; accepted: Received }>> {
  const { sent, reply } = await request(peer, capability, input, o);
  if (!reply.ok) return reply;
  if (reply.value.msg.type !== 'task.accepted') {
    return miss(
      fail(
        `the agent did not accept a ${capability} task: ${describeMessage(reply.value.msg)}`,
        'task.accepted',
        describeMessage(reply.value.msg),
      ),
    );
  }
  return got({ taskId: sent.task_id!, sent, accepted: reply.value });
}

const STREAM_TYPES = new Set(['task.accepted', 'task.event', 'task.result', 'plan.submit', 'task.handoff', 'input.request']);

/** The task's stream messages received so far, first copies only, in arrival order. */
export function streamOf(peer: Peer, taskId: string): Received[] {
  return peer.received.filter((r) => !r.resent && r.msg.task_id === taskId && STREAM_TYPES.has(r.msg.type));
}

/** Waits for the task's result and returns its whole stream (first copies, arrival order). */
export async function collectUntilResult(
  peer: Peer,
  taskId: string,
  timeoutMs = peer.stepTimeoutMs,
): Promise<Got<{ stream: Received[]; result: Received }>> {
  const r = await peer.waitFor(
    (m) => m.msg.type === 'task.result' && m.msg.task_id === taskId,
    `a task.result for task ${taskId}`,
    timeoutMs,
  );
  if (!r.ok) return r;
  return got({ stream: streamOf(peer, taskId), result: r.value });
}

/** Waits for the next stream message of a task that matches `pred`. */
export function waitStream(
  peer: Peer,
  taskId: string,
  pred: (m: Wire) => boolean,
  what: string,
  timeoutMs = peer.stepTimeoutMs,
): Promise<Got<Received>> {
  return peer.waitFor((r) => r.msg.task_id === taskId && STREAM_TYPES.has(r.msg.type) && pred(r.msg), what, timeoutMs);
}

/** Expects an `error` with `code` as the direct reply; returns it or a FAIL naming what came instead. */
export function expectErrorCode(reply: Got<Received>, code: string | string[], context: string): Got<Received> {
  if (!reply.ok) return reply;
  const codes = Array.isArray(code) ? code : [code];
  const m = reply.value.msg;
  if (m.type === 'error' && codes.includes(m.payload?.code)) return reply;
  return miss(
    fail(`${context}: expected ${codes.join(' or ')}, got ${describeMessage(m)}`, `error ${codes.join(' | ')}`, describeMessage(m)),
  );
}

/** An authorization grant valid for an hour, with the given permissions. */
export function grant(permissions: string[], expiresInMs = 3600_000): Record<string, unknown> {
  return { permissions, resources: [], expires_at: new Date(Date.now() + expiresInMs).toISOString() };
}
