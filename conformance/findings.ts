/**
 * What a case observed, shared by all its connections: the messages the agent sent, the
 * violations seen on the wire and by whom, and the lines that were not TAP messages
 * (spec: conformance#peer).
 */
import type { SessionState, Wire } from './session-state.ts';
import { cut } from './transcript.ts';
import { fail, type Outcome } from './verdict.ts';

/** One message received from the agent. */
export interface Received {
  /** Position among everything this case received, across connections. */
  index: number;
  /** Milliseconds since the case started. */
  at: number;
  conn: number;
  text: string;
  msg: Wire;
  /** True if it repeats, byte for byte, a message received before. */
  resent: boolean;
  /** The session the connection belongs to. */
  session: SessionState;
}

/** A spec violation seen during a case, and who committed it. */
export interface Violation {
  by: 'agent' | 'harness';
  text: string;
  at: number;
}

/** Everything a case observed, shared by all its connections. */
export class Findings {
  readonly violations: Violation[] = [];
  readonly received: Received[] = [];
  /** Agent frames that were not JSON at all. */
  nonProtocol = 0;
  /** Why a BUSY the agent answered may have been the suite's own load (spec: limits#concurrency). */
  readonly busyByLoad: string[] = [];
}

/** "no <what>" without a doubled article: "a reply to ping x" becomes "no reply to ping x". */
export function none(what: string): string {
  return `no ${what.replace(/^(?:a|an|the) /, '')}`;
}

/**
 * The outcome of a wait that ran out where a ping cannot classify the silence: the agent's id
 * is not known yet, or the agent wrote only non-protocol lines, which are quoted
 * (spec: conformance#verdicts, TAP-CONF-004).
 */
export function unclassifiedSilence(lines: readonly string[], what: string, waited: string): Outcome {
  if (lines.length === 0) return fail(`${none(what)} within ${waited}: the agent sent nothing the harness could read`, what, 'nothing');
  const noun = lines.length === 1 ? 'a line that is not a TAP message' : `${lines.length} lines that are not TAP messages`;
  return fail(
    `${none(what)} within ${waited}; instead the agent wrote ${noun} to its output: ${quotedLines(lines)} (TAP-CONF-004: stdout carries only TAP messages; logs go to stderr)`,
    what,
    `${lines.length === 1 ? 'the line' : 'the lines'} ${quotedLines(lines)}`,
  );
}

/** Up to three non-protocol lines, quoted. */
function quotedLines(lines: readonly string[]): string {
  const quoted = lines
    .slice(0, 3)
    .map((l) => JSON.stringify(cut(l, 200)))
    .join(', ');
  return lines.length > 3 ? `${quoted} and ${lines.length - 3} more` : quoted;
}

/** "; it also wrote … not TAP messages: …", or nothing when every line was a TAP message. */
export function nonProtocolNote(lines: readonly string[]): string {
  const n = lines.length;
  if (n === 0) return '';
  return `; it also wrote ${n === 1 ? 'a line' : `${n} lines`} that ${n === 1 ? 'is' : 'are'} not a TAP message: ${quotedLines(lines)} (TAP-CONF-004)`;
}
