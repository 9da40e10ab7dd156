/**
 * Why a reply did not come (spec: conformance#verdicts): the connection closed (the agent
 * crashed), the agent answers no ping either (it hung), or it answers pings but not this (it is
 * ignoring the message). A message that comes while the ping is out was only slow.
 */
import type { CloseInfo } from '../reference/transports/transport.ts';
import type { ChildExit } from '../reference/transports/stdio-child.ts';
import { none, nonProtocolNote, unclassifiedSilence, type Received } from './findings.ts';
import type { Wire } from './session-state.ts';
import { fail, got, miss, type Got } from './verdict.ts';

/** What the diagnosis needs of a harness connection. */
export interface Listening {
  closed(): CloseInfo | undefined;
  /** The agent process's exit (stdio), if it exited. */
  exit(): Promise<ChildExit | undefined>;
  /** Whether the agent sent a TAP message on the connection. */
  spokeTap(): boolean;
  readonly nonProtocolLines: readonly string[];
  /** Whether the agent's id is known, so that a valid ping can be sent. */
  agentKnown(): boolean;
  ping(): Promise<Wire>;
  wait(pred: (r: Received) => boolean, timeoutMs: number): Promise<Received | undefined>;
  readonly received: readonly Received[];
  readonly stepTimeoutMs: number;
  note(text: string): void;
}

/** Explains a missing reply: the crash, hang or ignoring it was, or the message when it came late. */
export async function diagnoseSilence(
  p: Listening,
  what: string,
  waitedMs: number,
  pred?: (r: Received) => boolean,
): Promise<Got<Received>> {
  const waited = `${Math.round(waitedMs)} ms`;
  const closed = p.closed();
  if (closed) {
    const exit = await p.exit();
    const how = exit
      ? exit.signal
        ? `the agent process was killed by ${exit.signal}`
        : `the agent process exited with code ${exit.code}`
      : `the agent closed the connection (code ${closed.code ?? 'none'}${closed.reason ? `, "${closed.reason}"` : ''})`;
    return miss({ ...fail(`${none(what)}: ${how} (crashed)`, what, how), silence: 'crashed' });
  }
  // Without the agent's id there is no valid ping to tell a hang from ignoring; an agent that
  // wrote nothing but non-protocol lines is failed for them at once.
  const spokeTap = p.spokeTap();
  if (!spokeTap && p.nonProtocolLines.length > 0) return miss(unclassifiedSilence(p.nonProtocolLines, what, waited));
  if (!p.agentKnown()) {
    // As long as a ping would be out, the awaited message may still come: then it was only slow.
    const late = pred ? await p.wait(pred, p.stepTimeoutMs) : undefined;
    if (late) {
      p.note(`${what} came late, after ${waited}`);
      return got(late);
    }
    if (p.closed()) return diagnoseSilence(p, what, waitedMs);
    return miss(unclassifiedSilence(p.nonProtocolLines, what, waited));
  }
  const sent = await p.ping();
  const isPong = (r: Received) => r.msg.type === 'pong' && r.msg.reply_to === sent.message_id;
  // The awaited message may still come while the ping is out: then it was only slow.
  const r = await p.wait((m) => isPong(m) || pred?.(m) === true, p.stepTimeoutMs);
  const late = pred ? p.received.find((m) => pred(m)) : undefined;
  if (late) {
    p.note(`${what} came late, after ${waited}`);
    return got(late);
  }
  if (r) {
    return miss({
      ...fail(
        `${none(what)} within ${waited}; the agent answers pings, so it is ignoring the message${nonProtocolNote(p.nonProtocolLines)}`,
        what,
        'nothing (pings still answered)',
      ),
      silence: 'ignoring',
    });
  }
  if (p.closed()) return diagnoseSilence(p, what, waitedMs);
  return miss({
    ...fail(
      `${none(what)} within ${waited}, and no answer to a ping either: the agent hung${nonProtocolNote(p.nonProtocolLines)}`,
      what,
      'nothing (not even a pong)',
    ),
    silence: 'hung',
  });
}
