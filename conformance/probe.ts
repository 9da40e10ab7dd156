/**
 * The probe: the first handshake of a run. It proves the agent starts (or the URL answers), reads
 * its card, and finds the faults every case would meet at its own handshake — output that is not
 * TAP, an invalid handshake.ack — so that the run can say so once, up front, and stop
 * (spec: conformance#verdicts, TAP-CONF-002, TAP-CONF-004).
 */
import type { Probe, RunEnv } from './context.ts';
import { makeStateFolder, removeStateFolder } from './leftovers.ts';
import { Findings, Peer } from './peer.ts';
import { IdSource, SessionState } from './session-state.ts';
import { handshake, invalidAck } from './steps.ts';
import { bindingOf, CannotRun, CONNECT_TIMEOUT_MS, keyEnv, openConnection, type Connection, type TargetSpec } from './target.ts';
import { cut, Transcript } from './transcript.ts';
import { natsBindingFault } from './nats-binding-check.ts';
import { mintToken } from './tokens.ts';

/** An agent id the harness may address messages to (identifier.schema.json). */
const IDENTIFIER = /^[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*$/;

/**
 * The first handshake of a run: proves the agent starts (or the URL answers) and reads its
 * card. Throws CannotRun when there is no agent to talk to at all; sets `stop` when the agent
 * breaks a rule at its handshake that every case would meet.
 */
export async function probe(env: Omit<RunEnv, 'probe' | 'startupMs'>): Promise<Probe> {
  try {
    return await probeOnce(env);
  } catch (err) {
    // A server reached by URL that closed one connection before it answered may have been busy (a
    // loaded machine, a moment without CPU past the liveness bound): a second connection tells that
    // from an agent that closes every one, which fails again and is told as before.
    if (!(err instanceof ClosedEarly)) throw err;
    env.log?.(`tap-conform: ${err.message}; trying a second connection`);
    await new Promise((r) => setTimeout(r, Math.round(1000 * env.timeScale)));
    return probeOnce(env);
  }
}

/** The probe's connection to an agent reached by URL closed before any answer, with no process that exited. */
class ClosedEarly extends CannotRun {}

async function probeOnce(env: Omit<RunEnv, 'probe' | 'startupMs'>): Promise<Probe> {
  let conn: Connection;
  const stderr: string[] = [];
  // A throwaway state folder for the probe's process.
  const state = makeStateFolder('tap-conform-probe-');
  try {
    conn = await openConnection(env.target, {
      env: keyEnv(env.key),
      onStderr: (l) => stderr.push(l),
      closeGraceMs: Math.round(2000 * env.timeScale),
      connectTimeoutMs: CONNECT_TIMEOUT_MS * env.timeScale,
      stateDir: state,
    });
  } catch (err) {
    removeStateFolder(state);
    throw new CannotRun((err as Error).message.replace(/^could not start agent: /, 'could not start '));
  }
  const transcript = new Transcript();
  const session = new SessionState(env.selfId);
  if (env.security?.tokens)
    session.credentials = { scheme: 'bearer', token: await mintToken(env.security.tokens, { sub: `${env.selfId}.probe` }) };
  const peer = new Peer({
    transport: conn.transport,
    binding: bindingOf(env.target),
    state: session,
    transcript,
    findings: new Findings(),
    ids: new IdSource('probe'),
    conn: 1,
    stepTimeoutMs: env.stepTimeoutMs,
    startupMs: 60_000 * env.timeScale,
    timeScale: env.timeScale,
    exited: conn.exited,
  });
  await peer.start();
  const hs = await handshake(peer);
  const result: Probe = {};
  const ack = peer.received.find((r) => r.msg.type === 'handshake.ack');
  if (ack) result.startupMs = ack.at - (transcript.entries.find((e) => e.dir === 'out')?.t ?? 0);
  if (hs.ok) {
    result.card = peer.state.card;
    result.params = peer.state.params;
    result.agentId = peer.state.agentId;
    if (peer.state.version !== undefined) result.version = peer.state.version;
  } else {
    result.problem = hs.outcome.detail;
    // What an invalid ack says is kept for the report, but no case addresses the agent by an id
    // that is not one: the harness would send invalid messages of its own making.
    const card = ack?.msg.payload?.agent;
    if (card && typeof card === 'object') result.card = card;
    if (typeof card?.agent_id === 'string' && IDENTIFIER.test(card.agent_id)) result.agentId = card.agent_id;
  }
  const stop = stopReason(env.target, peer.nonProtocolLines, ack && invalidAck(ack.msg));
  if (stop) result.stop = stop;
  // Whether the agent went away by itself, before the harness ends the connection next.
  const closedByAgent = peer.closed !== undefined;
  // An agent that wrote anything at all, even lines that are not TAP, is judged by the cases instead.
  const silent = peer.received.length === 0 && peer.nonProtocolLines.length === 0;
  const timer = setTimeout(() => conn.kill?.('SIGKILL'), 2000);
  await peer.close().catch(() => {});
  clearTimeout(timer);
  await conn.reap?.();
  removeStateFolder(state);
  if (!hs.ok && silent && env.target.kind === 'nats') {
    // spec: bindings-nats#frames: a binding fault every connection meets is named, with the case that judges it.
    const fault = await natsBindingFault(env.target.url, env.stepTimeoutMs, env.target.tls).catch(() => undefined);
    if (fault) return { ...result, stop: fault.sentence, stopCase: fault.caseId };
  }
  if (!hs.ok && silent) {
    const exit = await peer.waitExit(200);
    const how = exit ? (exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`) : 'closed the connection';
    const said = lastWords(stderr);
    const why = closedByAgent
      ? `${env.target.display} ${how} before answering the handshake`
      : `${env.target.display} hung: it sent nothing in answer to the handshake within ${Math.round(60_000 * env.timeScale)} ms and was killed`;
    const Stop = closedByAgent && !exit && env.target.kind !== 'stdio' ? ClosedEarly : CannotRun;
    throw new Stop(`${why}${said ? `; ${said}` : ''}`);
  }
  return result;
}

/**
 * The fault of the probe's handshake that stops the run, in one sentence a person can act on:
 * output that is not TAP (on stdio, a banner or log line on stdout), or an invalid ack.
 */
export function stopReason(target: TargetSpec, nonProtocol: readonly string[], invalid: string | null | undefined): string | undefined {
  if (nonProtocol.length > 0) {
    const first = JSON.stringify(cut(nonProtocol[0]!, 200));
    const more = nonProtocol.length > 1 ? ` (and ${nonProtocol.length - 1} more)` : '';
    return target.kind === 'stdio'
      ? `the agent wrote a line that is not a TAP message to its standard output at start-up: ${first}${more}. Over stdio, standard output carries only TAP messages, one per line; write banners and logs to standard error (spec: bindings-stdio#streams, TAP-STDIO-003)`
      : `the agent sent a frame that is not a TAP message at start-up: ${first}${more}. Every frame carries one TAP message (spec: envelope#encoding)`;
  }
  if (invalid)
    return `${invalid}. Every session starts with this ack, so every case would fail at its handshake; make the ack valid against schemas/v1/handshake.ack.schema.json (spec: handshake#ack)`;
  return undefined;
}

/** A line of an error report: "TypeError: …", "Error [ERR_MODULE_NOT_FOUND]: …", "ValueError: …", "panic: …". */
const ERROR_LINE =
  /^(?:Uncaught )?(?:[\w$]+\.)*(?:[A-Z][\w$]*)?(?:Error|Exception)(?: \[[\w-]+\])?: |^(?:fatal error|panic): |panicked at /;
/** A frame of a stack trace ("    at f (file:1:2)", '  File "x.py", line 3'), or the runtime's version line. */
const NOISE = /^\s+at |^\s+File "|^\s*\^+\s*$|^Node\.js v\d|^\s*$/;

/**
 * What an agent that died said about it, from its stderr: the thrown error's own line when there
 * is one ("its stderr says: TypeError: …"), else its last lines without stack frames.
 */
export function lastWords(stderr: readonly string[]): string {
  const error = stderr.findLast((l) => ERROR_LINE.test(l));
  if (error !== undefined) return `its stderr says: ${cut(error.trim(), 300)}`;
  const tail = stderr.filter((l) => !NOISE.test(l)).slice(-3);
  return tail.length ? `its stderr ends: ${tail.map((l) => cut(l.trim(), 200)).join(' | ')}` : '';
}
