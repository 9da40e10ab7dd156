/**
 * How sessions end, by one idempotent path: shutdown.request (that session only), the
 * requester's farewell, end of input on stdio, a process-wide shutdown (signals), and the loss
 * of the transport past the resume window. New work is refused with SHUTTING_DOWN, each
 * unfinished task is handed off and ends cancelled, and the agent says farewell while the
 * transport is open (spec: shutdown, resume#orphans).
 */
import type { MessageOf } from '../../schemas/src/index.ts';
import { errorEntry, isTerminal } from '../core/index.ts';
import type { CloseInfo } from '../core/frame.ts';
import type { Runtime } from './runtime.ts';
import type { Replier } from './replier.ts';
import type { Session } from './sessions.ts';
import type { TaskRunner } from './task-runner.ts';
import type { Task } from './tasks.ts';

/**
 * Ends a session once, however often it is asked. For up to drainMs (at most half the grace
 * period) the session still answers what is already on its way (new work gets SHUTTING_DOWN)
 * and running tasks may reach their ordinary result; every task still unfinished is then
 * handed off and ends cancelled with `code`; then farewell (when `farewell` and a transport is
 * attached) and the transport is closed (spec: shutdown#shutdown-sequence). Once the session's
 * input has ended (end of input on stdio) nothing more can arrive: the drain waits only for the
 * running tasks, and not at all when none runs.
 */
export function endSession(
  rt: Runtime,
  runner: TaskRunner,
  session: Session,
  code: 'SHUTTING_DOWN' | 'SESSION_LOST',
  reason: string,
  farewell: boolean,
  graceMs = rt.settings.shutdownGraceMs,
): Promise<void> {
  if (session.closing) return session.closing;
  session.ending = true;
  if (session.resumeTimer !== undefined) rt.clock.clearTimeout(session.resumeTimer);
  session.resumeTimer = undefined;
  const unfinished = (): Task[] => [...rt.tasks.all()].filter((t) => t.sessionId === session.id && !isTerminal(t.state));
  const { inputEnded } = session;
  const waitsFor = !inputEnded || unfinished().length > 0;
  const drain = session.link && waitsFor ? Math.min(rt.settings.drainMs, graceMs / 2) : 0;
  session.closing = (async () => {
    if (drain > 0) {
      let timer: unknown;
      await new Promise<void>((resolve) => {
        session.cutDrain = resolve;
        timer = rt.clock.setTimeout(resolve, drain);
        // With input ended the drain waits only for the running tasks: the last to end cuts it.
        if (inputEnded) session.drainCheck = () => unfinished().length === 0 && resolve();
      });
      rt.clock.clearTimeout(timer);
      session.cutDrain = undefined;
      session.drainCheck = undefined;
    }
    for (const task of unfinished()) runner.handOff(task, code, reason);
    if (farewell) session.deliver(session.message('session.farewell', { reason }));
    session.finish();
    rt.sessions.delete(session.id);
    rt.persist({ t: 'session-end', id: session.id });
    const link = session.link;
    session.link = undefined;
    if (link) await link.close(1000, reason);
  })();
  return session.closing;
}

/** shutdown.request: approve, then end this session only; a repeat changes nothing (spec: shutdown#request). */
export function onShutdownRequest(conn: Replier, msg: MessageOf<'shutdown.request'>): void {
  const session = conn.session!;
  conn.reply(session.message('shutdown.response', { approve: true }, { reply_to: msg.message_id }));
  const reason = msg.payload.reason.trim() === '' ? 'the requester asked to shut down' : msg.payload.reason;
  // A principal holding tap.admin.shutdown, by configuration or by its credentials, stops the whole process (spec: shutdown#scope).
  if (conn.rt.admins.has(session.principal) || session.authority?.permissions?.includes('tap.admin.shutdown'))
    conn.rt.shutdownProcess(reason);
  void endSession(conn.rt, conn.runner, session, 'SHUTTING_DOWN', reason, true, msg.payload.grace_ms);
}

/** The form of an error code (spec: errors#registry): upper case, digits and "_", as the registry spells its codes. */
const CODE_FORM = /^[A-Z][A-Z0-9_]*$/;

/**
 * The log line of an error the peer sent, naming its code as the registry spells it (spec:
 * errors#registry): a registered code sent in another spelling ("task_terminal") is named by the
 * registry's (TASK_TERMINAL) and its spelling noted; what is no code at all is said to be none.
 */
export function peerErrorLine(payload: { code?: unknown; message?: unknown }): string {
  const message = typeof payload.message === 'string' && payload.message.trim() !== '' ? payload.message : '(no message)';
  const code = payload.code;
  if (typeof code === 'string' && CODE_FORM.test(code)) return `the requester sent error ${code}: ${message}`;
  const sent = code === undefined ? 'none' : JSON.stringify(code).slice(0, 80);
  const registered = typeof code === 'string' ? errorEntry(code.trim().toUpperCase().replace(/[\s-]/g, '_')) : undefined;
  if (registered) return `the requester sent error ${registered.code}, spelt ${sent}, which is not a TAP error code: ${message}`;
  return `the requester sent an error whose code ${sent} is not a TAP error code (upper-case letters, digits and _, as in TASK_TERMINAL): ${message}`;
}

/** An `error` from the peer: never answered; a fatal one ends the connection (spec: errors#fatal-errors). */
export function onPeerError(conn: Replier, msg: MessageOf<'error'>): void {
  conn.rt.log('info', peerErrorLine(msg.payload));
  if (msg.payload.fatal === true) void conn.close(1000, 'fatal error from the requester');
}

/** The requester's farewell ends the session at once; the agent still ends its tasks and says its own farewell (spec: shutdown#farewell). */
export function onFarewell(conn: Replier, _msg: MessageOf<'session.farewell'>): void {
  const session = conn.session!;
  // A farewell cuts a shutdown already under way short (spec: shutdown#requester-farewell).
  session.cutDrain?.();
  void endSession(conn.rt, conn.runner, session, 'SHUTTING_DOWN', 'the requester said farewell', true, 0);
}

/**
 * The transport of a connection closed. End of input on stdio is a shutdown; a transport closed
 * by this side on purpose ends its session; a lost one leaves the session resumable for the
 * resume window (on stdio it is lost at once), then its tasks end SESSION_LOST (spec: resume#orphans).
 */
export function connectionClosed(conn: Replier, info: CloseInfo, eof: boolean): Promise<void> {
  const rt = conn.rt;
  const session = conn.session;
  if (!session || session.link !== conn || session.ended) return Promise.resolve();
  if (eof) {
    // Nothing more can arrive: a shutdown under way need not wait for requests in flight, and one
    // that starts now waits only for the tasks still running.
    session.inputEnded = true;
    if (session.closing) session.cutDrain?.();
    return endSession(rt, conn.runner, session, 'SHUTTING_DOWN', 'end of input', true);
  }
  session.cutDrain?.();
  session.link = undefined;
  if (conn.deliberate || conn.stdio) {
    return endSession(
      rt,
      conn.runner,
      session,
      'SESSION_LOST',
      `the transport was closed (${info.reason ?? info.code ?? 'no reason'})`,
      false,
    );
  }
  session.orphanedAt = rt.now();
  session.resumeTimer = rt.clock.setTimeout(() => {
    session.resumeTimer = undefined;
    void endSession(rt, conn.runner, session, 'SESSION_LOST', 'the session was not resumed within its resume window', false);
  }, rt.settings.resumeWindowMs);
  return Promise.resolve();
}

/** A process-wide shutdown: every session ends, new connections are refused (spec: shutdown#signals). */
export async function shutdownAll(rt: Runtime, runner: TaskRunner, connections: Iterable<Replier>, reason: string): Promise<void> {
  rt.shuttingDown = true;
  const endings = [...rt.sessions.values()].map((s) => endSession(rt, runner, s, 'SHUTTING_DOWN', reason, true));
  for (const conn of connections) if (!conn.session) endings.push(conn.close(1001, reason));
  await Promise.all(endings);
}
