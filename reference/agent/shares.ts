/**
 * Shares of a source: the session and task caps shared out by who draws on them, so that one
 * peer cannot fill a cap alone. A session's source is its principal, or for an anonymous session
 * the origin of its connection; when the session table is full, an orphaned session with no
 * unfinished task gives way before a new one is refused BUSY (spec: limits#sources).
 */
import { errorPayload, type ErrorPayload } from '../core/index.ts';
import type { Runtime } from './runtime.ts';
import type { Session } from './sessions.ts';
import { endSession } from './shutdown.ts';
import type { TaskRunner } from './task-runner.ts';

/** Marks the share of an origin's anonymous sessions; no principal starts with a NUL character. */
const ORIGIN = '\u0000origin ';

/**
 * The source a new session draws on: its principal when the handshake authenticated one, else the
 * origin of its connection, else (a binding that cannot tell peers apart) the session's own
 * principal, "session:<session_id>" (spec: authorization#principals).
 */
export function sourceOf(est: { principal?: string; sessionId: string }, origin: string | undefined): string {
  const own = `session:${est.sessionId}`;
  const principal = est.principal ?? own;
  return principal === own && origin !== undefined ? `${ORIGIN}${origin}` : principal;
}

/** The source as people read it: "principal p", or "anonymous requesters from <origin>". */
export function describeSource(share: string): string {
  return share.startsWith(ORIGIN) ? `anonymous requesters from ${share.slice(ORIGIN.length)}` : `principal ${share}`;
}

/** True for the share of an origin's anonymous sessions. */
export function isOriginShare(share: string): boolean {
  return share.startsWith(ORIGIN);
}

/**
 * Makes room for one more session of source `share`, or says why there is none (BUSY). At the
 * source's share, its longest-orphaned session with no unfinished task is ended; with the table
 * full, the same of the source holding the most sessions. Only such sessions give way: a live
 * one, or one whose tasks still run, never does.
 */
export function admitSession(rt: Runtime, runner: TaskRunner, share: string): ErrorPayload | null {
  const { maxSessions, maxSessionsPerSource } = rt.settings;
  const held = new Map<string, number>();
  let total = 0;
  for (const s of rt.sessions.values()) {
    held.set(s.share, (held.get(s.share) ?? 0) + 1);
    total++;
  }
  const busy = rt.tasks.sessionsWithUnfinishedTasks();
  const mayGo = (s: Session): boolean => !s.link && !s.ended && !s.ending && s.established && !busy.has(s.id);
  const mine = held.get(share) ?? 0;
  if (mine >= maxSessionsPerSource) {
    const victim = pick(
      rt,
      (s) => s.share === share && mayGo(s),
      () => 0,
    );
    if (!victim) {
      return errorPayload(
        'BUSY',
        `${describeSource(share)} hold ${mine} sessions, their share of this agent's ${maxSessions}, and none is orphaned without unfinished tasks; end one (session.farewell) or try again later`,
        { scope: 'source', limit: maxSessionsPerSource },
      );
    }
    makeRoom(rt, runner, victim, 'its source holds its share of sessions');
    total--;
    held.set(share, mine - 1);
  }
  if (total >= maxSessions) {
    const victim = pick(rt, mayGo, (s) => held.get(s.share) ?? 0);
    if (!victim) {
      return errorPayload(
        'BUSY',
        `the agent holds ${total} sessions, its limit, and none is orphaned without unfinished tasks; try again later`,
        { scope: 'agent', limit: maxSessions },
      );
    }
    makeRoom(rt, runner, victim, 'the session table is full');
  }
  return null;
}

/** The session `ok` allows whose source weighs most, the longest orphaned among equals. */
function pick(rt: Runtime, ok: (s: Session) => boolean, weight: (s: Session) => number): Session | undefined {
  let best: Session | undefined;
  for (const s of rt.sessions.values()) {
    if (!ok(s)) continue;
    if (!best || weight(s) > weight(best) || (weight(s) === weight(best) && (s.orphanedAt ?? 0) < (best.orphanedAt ?? 0))) {
      best = s;
    }
  }
  return best;
}

/** Ends an orphaned session with no unfinished task before its resume window passes, to admit a new one. */
function makeRoom(rt: Runtime, runner: TaskRunner, victim: Session, why: string): void {
  rt.log('info', `ended orphaned session ${victim.id} of ${describeSource(victim.share)} to admit a new session: ${why}`);
  void endSession(rt, runner, victim, 'SESSION_LOST', `the session was ended to make room: ${why}`, false, 0);
}
