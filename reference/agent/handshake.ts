/**
 * The agent's side of the handshake around the core state machine: its configuration, the
 * journal record written before handshake.ack is sent, and the session that handshake.go
 * establishes or resumes (spec: handshake, resume#reconnect).
 */
import type { AgentHandshakeConfig, EstablishedSession } from '../core/index.ts';
import { constantTimeEqual } from '../core/index.ts';
import { replayTask } from './requests.ts';
import type { Runtime } from './runtime.ts';
import type { Replier } from './replier.ts';
import { Session, type SessionInfo } from './sessions.ts';
import { sourceOf } from './shares.ts';
import type { DuplicateTable } from './duplicates.ts';

const configs = new WeakMap<Runtime, AgentHandshakeConfig>();
const encoder = new TextEncoder();

/**
 * The handshake machine's configuration for one connection: the agent's, with the connection's
 * credentials check and the principal its binding authenticated (spec: authorization#principals).
 */
export function connectionHandshakeConfig(
  rt: Runtime,
  verifyCredentials: AgentHandshakeConfig['verifyCredentials'],
  bindingPrincipal: string | undefined,
): AgentHandshakeConfig {
  const config = handshakeConfig(rt);
  if (!rt.authenticate && bindingPrincipal === undefined) return config;
  return {
    ...config,
    ...(rt.authenticate ? { verifyCredentials } : {}),
    ...(bindingPrincipal !== undefined ? { bindingPrincipal } : {}),
  };
}

/** The handshake machine's configuration for this agent. */
/** The extensions the agent supports as its card lists them in a 1.1 ack (spec: handshake#negotiated-extensions). */
export function cardExtensions(rt: Pick<Runtime, 'settings'>): NonNullable<AgentHandshakeConfig['extensions']> {
  return rt.settings.extensions.map(({ uri, required, description }) => ({
    uri,
    ...(required !== undefined ? { required } : {}),
    ...(description !== undefined ? { description } : {}),
  }));
}

export function handshakeConfig(rt: Runtime): AgentHandshakeConfig {
  let config = configs.get(rt);
  if (!config) {
    config = {
      card: rt.card,
      random: rt.random,
      now: () => rt.now(),
      hmac: rt.hmac,
      skewMs: rt.settings.skewMs,
      params: {
        heartbeat_ms: rt.settings.heartbeatMs,
        request_timeout_ms: rt.settings.requestTimeoutMs,
        streaming: rt.settings.streaming,
      },
      resumeWindowMs: rt.settings.resumeWindowMs,
      maxRetainedMessages: rt.settings.maxRetainedMessages,
      keys: rt.keys.map(),
      requireCredentials: rt.requireCredentials,
      supportedVersions: rt.settings.versions,
      extensions: cardExtensions(rt),
      resume: (request) => {
        // spec: resume#reconnect: same principal, same requester, that session's token; and the
        // version the session was opened in (spec: versioning#tap-1-1).
        const s = rt.sessions.get(request.session_id);
        return (
          !!s &&
          s.version === request.version &&
          !s.ended &&
          !s.ending &&
          s.principal === request.principal &&
          s.peerId === request.peer &&
          constantTimeEqual(encoder.encode(s.resumeToken), encoder.encode(request.resume_token))
        );
      },
    };
    configs.set(rt, config);
  }
  return config;
}

function infoOf(est: EstablishedSession, origin: string | undefined): SessionInfo {
  const info: SessionInfo = {
    id: est.sessionId,
    resumeToken: est.resumeToken,
    principal: est.principal ?? `session:${est.sessionId}`,
    peerId: est.peer.agent_id,
    version: est.version,
    params: est.params,
  };
  if (est.integrity) info.keyId = est.integrity.keyId;
  const share = sourceOf(est, origin);
  if (share !== info.principal) info.share = share;
  return info;
}

/** Journals the session before handshake.ack is sent, so that it can be resumed after a restart (spec: tasks#durability). */
export function sessionPending(rt: Runtime, est: EstablishedSession, origin: string | undefined): void {
  rt.persist({ t: 'session', info: infoOf(est, origin) });
}

/**
 * The session handshake.go established: a new one, or the resumed one moved to this connection,
 * whose previous connection is closed and whose listed tasks are replayed (spec: resume#reconnect).
 */
export function sessionEstablished(conn: Replier, est: EstablishedSession, early: DuplicateTable, origin: string | undefined): Session {
  const rt = conn.rt;
  let session = est.resumed ? rt.sessions.get(est.sessionId) : undefined;
  if (session && !session.ended) {
    if (session.resumeTimer !== undefined) rt.clock.clearTimeout(session.resumeTimer);
    session.resumeTimer = undefined;
    session.orphanedAt = undefined;
    const previous = session.link;
    session.link = conn;
    if (previous && previous !== conn) void previous.close(1000, 'the session was resumed on another connection');
    session.params = est.params;
    session.version = est.version;
    session.extensions = est.extensions;
    // The credentials of the resuming handshake bound the session from now on.
    session.authority = est.authority;
  } else {
    session = new Session(infoOf(est, origin), rt.out, rt.settings);
    session.extensions = est.extensions;
    session.authority = est.authority;
    rt.sessions.set(session.id, session);
    session.link = conn;
  }
  session.signing = est.integrity ?? undefined;
  session.established = true;
  for (const [id, entry] of early.entries()) session.seen.set(id, entry);
  for (const entry of est.resumeTasks ?? []) {
    const task = rt.tasks.get(session.principal, entry.task_id);
    const refusal = replayTask(conn, session, task, entry.task_id, entry.last_sequence);
    if (refusal) conn.send(session.message('error', refusal, { task_id: entry.task_id }));
  }
  return session;
}
