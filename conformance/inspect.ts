/**
 * Checks every frame the agent sends, whatever the case is about: that it is one UTF-8 JSON
 * object, valid against schemas/v1, sent in the right direction, with the session's identities,
 * a good signature under integrity, gap-free sequences and byte-identical re-sends
 * (spec: envelope, messages#catalogue, tasks#sequences, integrity#mac).
 */
import { createHash } from 'node:crypto';
import type { InboundFrame } from '../reference/transports/transport.ts';
import { checkMac } from './mac.ts';
import { describeIssues, messageEntry, validateMessage, type Issue } from './schemas.ts';
import type { SessionState, Wire } from './session-state.ts';
import { cut } from './transcript.ts';

/** What the harness made of one inbound frame. */
export interface Inspected {
  /** The frame as text, when it was valid UTF-8. */
  text?: string;
  /** The decoded message, when the frame was a JSON object with a readable type. */
  msg?: Wire;
  /** Schema issues of the message, if any. */
  issues?: Issue[];
  /** Each way the frame breaks the spec, for people; the agent is at fault for all of them. */
  violations: string[];
  /** True if the frame is a byte-identical re-send of a message already received. */
  resent: boolean;
  /** True if the frame was not JSON at all (a log line on stdout, for instance). */
  nonProtocol: boolean;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function hexPreview(bytes: Uint8Array, max = 48): string {
  return Buffer.from(bytes.subarray(0, max)).toString('hex') + (bytes.length > max ? '…' : '');
}

/**
 * Inspects one inbound frame against the session state, recording ids, sequences and replies
 * in `state`. `binding` words the diagnosis of a non-JSON frame.
 */
export function inspectFrame(frame: InboundFrame, state: SessionState, binding: 'stdio' | 'websocket' | 'nats'): Inspected {
  const out: Inspected = { violations: [], resent: false, nonProtocol: false };
  if (frame.binary) out.violations.push('the agent sent a binary WebSocket frame; TAP messages travel in text frames');
  let text: string;
  try {
    text = utf8.decode(frame.bytes);
  } catch {
    out.violations.push(`the agent sent a frame that is not valid UTF-8 (bytes ${hexPreview(frame.bytes)})`);
    return out;
  }
  out.text = text;
  if (frame.oversized) {
    out.violations.push(`the agent sent a frame of ${frame.byteLength} bytes, more than the harness reads`);
    return out;
  }
  const max = state.params?.max_message_bytes;
  if (typeof max === 'number' && frame.byteLength > max) {
    out.violations.push(`the agent sent a ${frame.byteLength}-byte message, over the negotiated max_message_bytes of ${max}`);
  }
  if (text.charCodeAt(0) === 0xfeff) out.violations.push('the agent sent a frame starting with a byte order mark');
  let value: unknown;
  try {
    value = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch {
    out.nonProtocol = true;
    out.violations.push(
      binding === 'stdio'
        ? `the agent wrote a non-protocol line to stdout: ${JSON.stringify(cut(text, 200))} (stdout carries only TAP messages; logs go to stderr)`
        : `the agent sent a text frame that is not JSON: ${JSON.stringify(cut(text, 200))}`,
    );
    return out;
  }
  if (nestedDeeperThan(text, MAX_NESTING_DEPTH)) {
    out.violations.push(`the agent sent a message nested deeper than ${MAX_NESTING_DEPTH} levels: ${cut(text, 200)}`);
    return out;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    out.violations.push(`the agent sent JSON that is not an object: ${cut(text, 200)}`);
    return out;
  }
  const obj = value as Record<string, unknown>;
  if (typeof obj.type !== 'string' || typeof obj.message_id !== 'string') {
    out.violations.push(`the agent sent an object without a string type and message_id: ${cut(text, 200)}`);
    return out;
  }
  const msg = obj as unknown as Wire;
  out.msg = msg;
  const issues = validateMessage(msg);
  if (issues) {
    out.issues = issues;
    out.violations.push(`the agent's ${msg.type} is invalid against schemas/v1: ${describeIssues(issues, 3, msg)}`);
  }
  checkEnvelope(msg, text, state, out);
  // A message over the session's limit is the agent's fault, said above; what the harness keeps of
  // it is cut, so that an agent sending many cannot exhaust the harness's memory.
  if (typeof max === 'number' && frame.byteLength > max) {
    out.text = cut(text, KEPT_CHARS);
    out.msg = clipStrings(msg) as Wire;
  }
  return out;
}

/** The longest string the harness keeps whole of a message over the session's max_message_bytes. */
const KEPT_CHARS = 65_536;

/** `value` with each string longer than KEPT_CHARS cut (a message nests at most 64 levels, checked before). */
function clipStrings(value: unknown): unknown {
  if (typeof value === 'string') return cut(value, KEPT_CHARS);
  if (Array.isArray(value)) return value.map(clipStrings);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, clipStrings(v)]));
  return value;
}

/** What the harness remembers of a message's text to know a byte-identical re-send: the text, or a digest of a long one. */
function fingerprint(text: string): string {
  return text.length > KEPT_CHARS ? `sha256:${createHash('sha256').update(text).digest('base64')}` : text;
}

/** The deepest nesting a TAP message may have, its top-level object being level 1 (spec: limits#nesting). */
export const MAX_NESTING_DEPTH = 64;

/**
 * True if valid JSON text opens a container more than `limit` levels deep. One pass without
 * recursion, so that no frame can exhaust the harness's stack (spec: limits#nesting).
 */
export function nestedDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      for (i++; i < text.length && text.charCodeAt(i) !== 34; i++) if (text.charCodeAt(i) === 92) i++;
    } else if (c === 91 || c === 123) {
      if (++depth > limit) return true;
    } else if (c === 93 || c === 125) depth--;
  }
  return false;
}

/**
 * The first member name that appears twice in one object of a JSON text, or null. JSON.parse keeps
 * only the last one, so duplicates are found by scanning the text (spec: envelope#encoding).
 */
export function duplicateMember(text: string): string | null {
  const stack: (Set<string> | null)[] = [];
  let i = 0;
  let expectKey = false;
  while (i < text.length) {
    const ch = text[i]!;
    if (ch === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const top = stack[stack.length - 1];
      if (expectKey && top) {
        const name = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.has(name)) return name;
        top.add(name);
        expectKey = false;
      }
      i = j + 1;
      continue;
    }
    if (ch === '{') {
      stack.push(new Set());
      expectKey = true;
    } else if (ch === '[') stack.push(null);
    else if (ch === '}' || ch === ']') stack.pop();
    else if (ch === ',') expectKey = stack[stack.length - 1] !== null;
    i++;
  }
  return null;
}

function checkEnvelope(msg: Wire, text: string, state: SessionState, out: Inspected): void {
  const v = out.violations;
  const dup = duplicateMember(text);
  if (dup !== null) v.push(`the agent's ${msg.type} has the member "${dup}" twice in one object`);
  const entry = messageEntry(msg.type);
  if (entry && entry.direction === 'requester_to_agent') {
    v.push(`the agent sent ${msg.type}, which only a requester sends`);
  }
  // spec: shutdown#farewell (TAP-SHUT-011) — the farewell is the agent's last message of the session.
  if (state.agentFarewell) v.push(`the agent sent ${msg.type} after its session.farewell; nothing follows a farewell in its session`);
  if (msg.type === 'session.farewell') state.agentFarewell = true;
  // spec: envelope#members (TAP-ENV-013) — reply_to only where the catalogue's reply_to column allows it.
  if (entry?.reply_to === 'absent' && msg.reply_to !== undefined)
    v.push(`the agent put reply_to on ${msg.type}, which never answers a request (its reply_to column in messages.json is "absent")`);
  // A byte-identical re-send (for a duplicate request, or a resume replay) is legitimate.
  const first = state.agentMessages.get(msg.message_id);
  const kept = fingerprint(text);
  if (first !== undefined) {
    if (first === kept) {
      out.resent = true;
      return;
    }
    v.push(`the agent reused message_id ${msg.message_id} for a different message (a re-send must be byte-for-byte the original)`);
  } else {
    state.agentMessages.set(msg.message_id, kept);
  }
  if (msg.type === 'handshake.ack' && msg.payload && typeof msg.payload === 'object') {
    const card = msg.payload.agent as { agent_id?: unknown } | undefined;
    if (card && typeof card.agent_id === 'string' && msg.source !== card.agent_id) {
      v.push(`handshake.ack comes from source "${msg.source}" but its card names agent_id "${card.agent_id}"`);
    }
  }
  const version = state.version;
  if (version !== undefined && msg.protocol !== `tap/${version}`) {
    v.push(`the agent sent protocol "${msg.protocol}" in a session that negotiated ${version}`);
  }
  if (state.agentId !== undefined && msg.type !== 'handshake.ack' && msg.source !== state.agentId) {
    v.push(`the agent's ${msg.type} has source "${msg.source}", not its handshake identity "${state.agentId}"`);
  }
  if (msg.target !== state.selfId && msg.type !== 'error') {
    v.push(`the agent's ${msg.type} has target "${msg.target}", not the harness's identity "${state.selfId}"`);
  }
  if (state.bound && state.sessionId !== undefined && msg.session_id === undefined && msg.type !== 'handshake.ack') {
    v.push(`the agent's ${msg.type} carries no session_id; every message after handshake.ack carries it`);
  }
  if (state.bound && state.sessionId !== undefined && msg.session_id !== undefined && msg.session_id !== state.sessionId) {
    v.push(`the agent's ${msg.type} carries session_id ${msg.session_id}, not this session's ${state.sessionId}`);
  }
  if (state.integrity && !isUnsignedHandshakeError(msg)) {
    const bad = checkMac(msg as unknown as Record<string, unknown>, state.integrity.key, state.integrity.keyId);
    if (bad) v.push(`the agent's ${msg.type} is not correctly signed under the negotiated integrity: ${bad}`);
  }
  if (msg.reply_to !== undefined) {
    if (state.sentErrors.has(msg.reply_to))
      v.push(`the agent answered an error message (${msg.type} with reply_to ${msg.reply_to}); nothing answers an error`);
    const prior = state.replies.get(msg.reply_to);
    // A message refused before the duplicate check (envelope, signature, identity) is not
    // remembered, so each copy of it gets an error of its own: two errors are not two replies.
    const bothErrors = prior !== undefined && msg.type === 'error' && prior.type === 'error';
    if (prior !== undefined && prior.text !== text && !bothErrors) {
      v.push(`the agent sent a second, different reply to ${msg.reply_to} (every request gets exactly one direct reply)`);
    } else if (prior === undefined) state.replies.set(msg.reply_to, { type: msg.type, text });
  }
  if (entry?.sequenced && typeof msg.task_id === 'string' && typeof msg.sequence === 'number') {
    checkSequence(msg, text, state, v);
  }
  if (entry && !entry.sequenced && msg.sequence !== undefined) {
    v.push(`the agent put a sequence on ${msg.type}, which is not part of a task stream`);
  }
}

/** Errors answering a handshake.init that proposed integrity are unsigned (spec: integrity#handshake-errors). */
function isUnsignedHandshakeError(msg: Wire): boolean {
  return msg.type === 'error' && msg.signature === undefined;
}

function checkSequence(msg: Wire, text: string, state: SessionState, v: string[]): void {
  const taskId = msg.task_id!;
  const seq = msg.sequence!;
  let stream = state.streams.get(taskId);
  if (!stream) {
    stream = new Map();
    state.streams.set(taskId, stream);
  }
  const seen = stream.get(seq);
  const kept = fingerprint(text);
  if (seen !== undefined) {
    if (seen !== kept)
      v.push(`task ${taskId}: sequence ${seq} was sent twice with different content (a replay must be byte-for-byte the original)`);
    return;
  }
  const last = stream.size === 0 ? 0 : Math.max(...stream.keys());
  if (msg.type === 'task.accepted' && seq !== 1) v.push(`task ${taskId}: task.accepted has sequence ${seq}; it is always 1`);
  else if (seq !== last + 1 && !state.lenientGaps && !(stream.size === 0 && (msg.type !== 'task.accepted' || state.adopted.has(taskId)))) {
    v.push(`task ${taskId}: sequence ${seq} follows ${last}; sequences run 1, 2, 3 … without gaps`);
  }
  const resultSeq = state.resultSeq.get(taskId);
  if (resultSeq !== undefined && seq > resultSeq) {
    v.push(`task ${taskId}: ${msg.type} (sequence ${seq}) came after the task.result (sequence ${resultSeq}); nothing follows the result`);
  }
  if (msg.type === 'task.result') state.resultSeq.set(taskId, seq);
  stream.set(seq, kept);
}
