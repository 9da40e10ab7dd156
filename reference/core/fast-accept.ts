/**
 * A first look at the messages every task exchanges, before the compiled validators: each check
 * here says "certainly valid" or "not sure", never "invalid". A message it is sure of skips the
 * validators; anything else (a signature, a progress event, a failed result, an unusual field)
 * goes to them as before, so the answer and its issues never depend on this file
 * (spec: messages#payload-validation).
 *
 * The checks restate parts of schemas/v1. SCHEMA_ASSUMPTIONS lists every schema keyword they were
 * written for, and a test compares it with the emitted files and the checks with the full
 * validators, so a change to a schema fails the test instead of drifting.
 */
import { isKnownType } from './catalogue.ts';

/** The schema keywords the checks below were written for: file#pointer → value. */
export const SCHEMA_ASSUMPTIONS: Readonly<Record<string, unknown>> = {
  'identifier.schema.json#/pattern': '^[a-z0-9][a-z0-9_-]*(\\.[a-z0-9_-]+)*$(?!\\n)',
  'identifier.schema.json#/maxLength': 128,
  'envelope.schema.json#/required': ['protocol', 'message_id', 'type', 'source', 'target', 'timestamp', 'payload'],
  'envelope.schema.json#/properties/protocol/pattern': '^tap/(0|[1-9][0-9]{0,3})\\.(0|[1-9][0-9]{0,3})$(?!\\n)',
  'envelope.schema.json#/properties/message_id/pattern': '^[A-Za-z0-9._:-]{1,128}$(?!\\n)',
  'envelope.schema.json#/properties/session_id/pattern': '^[A-Za-z0-9_-]{22,128}$(?!\\n)',
  'envelope.schema.json#/properties/idempotency_key/maxLength': 256,
  'envelope.schema.json#/properties/metadata/properties/trace_id/maxLength': 128,
  'envelope.schema.json#/properties/metadata/properties/attempt/minimum': 1,
  'envelope.schema.json#/properties/metadata/properties/traceparent/type': 'string',
  'envelope.schema.json#/allOf/0/then/properties/metadata/properties/traceparent/pattern':
    '^00-(?!0{32}-)[0-9a-f]{32}-(?!0{16}-)[0-9a-f]{16}-[0-9a-f]{2}$(?!\\n)',
  'task.request.payload.schema.json#/required': ['capability', 'input'],
  'task.request.payload.schema.json#/properties/capability/pattern': '^[a-z][a-z0-9_-]*(\\.[a-z][a-z0-9_-]*)+$(?!\\n)',
  'task.request.payload.schema.json#/properties/quiet/type': 'boolean',
  'task.accepted.payload.schema.json#/required': ['capability', 'deadline'],
  'task.accepted.schema.json#/required': ['type', 'payload', 'task_id', 'sequence', 'reply_to', 'session_id'],
  'task.request.schema.json#/required': ['type', 'payload', 'task_id', 'session_id'],
  'task.event.schema.json#/required': ['type', 'payload', 'task_id', 'sequence', 'session_id'],
  'task.result.schema.json#/required': ['type', 'payload', 'task_id', 'sequence', 'session_id'],
  'task.event.payload.schema.json#/properties/message/maxLength': 65536,
  'task.event.payload.schema.json#/properties/level/anyOf': ['debug', 'info', 'warn', 'error'].map((c) => ({ const: c, type: 'string' })),
  'task.event.payload.schema.json#/properties/state/anyOf': ['running', 'cancelling', 'input_required'].map((c) => ({
    const: c,
    type: 'string',
  })),
  'task.result.payload.schema.json#/required': ['status'],
};

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isCount(v: unknown): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= Number.MAX_SAFE_INTEGER;
}

// The schemas' patterns without the Unicode flag and the "(?!\n)" guard, which change nothing for
// these ASCII classes: the plain engine runs them faster.
const IDENTIFIER = /^[a-z0-9][a-z0-9_-]*(?:\.[a-z0-9_-]+)*$/;
const CAPABILITY = /^[a-z][a-z0-9_-]*(?:\.[a-z][a-z0-9_-]*)+$/;
const MESSAGE_ID = /^[A-Za-z0-9._:-]+$/;
const SESSION_ID = /^[A-Za-z0-9_-]+$/;
const PLAIN_TEXT = /^[\x20-\x7e]*$/;
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_PARENT_ID = '0'.repeat(16);

/** What the caches of values seen valid last hold before any was: equal to no value a message can carry. */
const NOTHING_SEEN = Symbol('nothing seen');

/**
 * The identifiers seen valid last: a session's source, target and task ids repeat in every
 * message, and comparing a string costs less than matching it. Only valid values enter.
 */
const recent: string[] = ['', '', '', '', '', '', '', ''];
let recentNext = 0;

/** An identifier: dot-separated segments of [a-z0-9_-], the first starting with a letter or digit, 1–128 characters. */
export function isIdentifier(v: unknown): v is string {
  if (typeof v !== 'string' || v.length === 0) return false;
  for (let i = 0; i < recent.length; i++) if (recent[i] === v) return true;
  if (v.length > 128 || !IDENTIFIER.test(v)) return false;
  recent[recentNext] = v;
  recentNext = (recentNext + 1) % recent.length;
  return true;
}

/** A capability name: two or more dot-separated segments, each a lowercase letter then [a-z0-9_-], 128 characters at most. */
function isCapability(v: unknown): boolean {
  return typeof v === 'string' && v.length <= 128 && CAPABILITY.test(v);
}

/** A message id: 1–128 characters of [A-Za-z0-9._:-]. */
export function isMessageId(v: unknown): v is string {
  return typeof v === 'string' && v.length <= 128 && MESSAGE_ID.test(v);
}

let lastSession: unknown = NOTHING_SEEN;

function isSessionId(v: unknown): boolean {
  if (v === lastSession) return true;
  if (typeof v !== 'string' || v.length < 22 || v.length > 128 || !SESSION_ID.test(v)) return false;
  lastSession = v;
  return true;
}

/** Printable ASCII only, at most `max` characters: within every "no control characters" pattern. */
function isPlainText(v: unknown, max: number): boolean {
  return typeof v === 'string' && v.length <= max && PLAIN_TEXT.test(v);
}

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const TIMESTAMP = /^[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?Z$/;
/** The timestamp seen valid last: a sender writes the same one for every message of a millisecond. */
let lastTimestamp: unknown = NOTHING_SEEN;

/**
 * A Timestamp "YYYY-MM-DDThh:mm:ss[.f…]Z" with a real date. Not sure of 29 February or a leap
 * second, which the validators judge.
 */
function isTimestamp(v: unknown): boolean {
  if (v === lastTimestamp) return true;
  if (typeof v !== 'string' || v.length > 64 || !TIMESTAMP.test(v)) return false;
  const month = (v.charCodeAt(5) - 48) * 10 + v.charCodeAt(6) - 48;
  const day = (v.charCodeAt(8) - 48) * 10 + v.charCodeAt(9) - 48;
  if (day > DAYS[month - 1]!) return false;
  lastTimestamp = v;
  return true;
}

/** The traceparent seen valid last: every message of a task's stream carries the task's own. */
let lastTraceparent: unknown = NOTHING_SEEN;

/** A traceparent of version 00 whose trace-id and parent-id are not all zero: what every 1.1 task carries. */
function isTraceparent(v: unknown): boolean {
  if (v === lastTraceparent) return true;
  if (typeof v !== 'string' || !TRACEPARENT.test(v) || v.slice(3, 35) === ZERO_TRACE_ID || v.slice(36, 52) === ZERO_PARENT_ID) return false;
  lastTraceparent = v;
  return true;
}

function isMetadata(v: unknown): boolean {
  if (!isObject(v)) return false;
  if (v.trace_id !== undefined && !isPlainText(v.trace_id, 128)) return false;
  if (v.span_id !== undefined && !isPlainText(v.span_id, 128)) return false;
  // tracestate and baggage have their W3C forms, which the validators judge (spec: envelope#trace-context).
  if (v.traceparent !== undefined && !isTraceparent(v.traceparent)) return false;
  if (v.tracestate !== undefined || v.baggage !== undefined) return false;
  return v.attempt === undefined || isCount(v.attempt);
}

/**
 * True when the message certainly satisfies envelope.schema.json: a catalogue type other than
 * handshake.init, every field the envelope defines in its plainest form, no signature. False
 * means only "ask the validator".
 */
export function surelyValidEnvelope(m: Record<string, unknown>): boolean {
  if (
    (m.protocol !== 'tap/1.0' && m.protocol !== 'tap/1.1') ||
    typeof m.type !== 'string' ||
    m.type === 'handshake.init' ||
    !isKnownType(m.type)
  )
    return false;
  if (!isMessageId(m.message_id) || !isIdentifier(m.source) || !isIdentifier(m.target)) return false;
  if (!isTimestamp(m.timestamp) || !isObject(m.payload) || m.signature !== undefined) return false;
  if (m.session_id !== undefined && !isSessionId(m.session_id)) return false;
  if (m.task_id !== undefined && !isIdentifier(m.task_id)) return false;
  if (m.reply_to !== undefined && !isMessageId(m.reply_to)) return false;
  if (m.sequence !== undefined && !isCount(m.sequence)) return false;
  if (m.deadline !== undefined && !isTimestamp(m.deadline)) return false;
  if (m.idempotency_key !== undefined && !(isPlainText(m.idempotency_key, 256) && (m.idempotency_key as string).length > 0)) return false;
  return m.metadata === undefined || isMetadata(m.metadata);
}

function requestPayload(p: Record<string, unknown>): boolean {
  if (!isCapability(p.capability) || !('input' in p) || p.authorization !== undefined) return false;
  if (p.quiet !== undefined && typeof p.quiet !== 'boolean') return false;
  // A delegation path (1.1) goes to the full validator: its items and their uniqueness are the schema's.
  if (p.delegation !== undefined) return false;
  return p.timeout_ms === undefined || isCount(p.timeout_ms);
}

function acceptedPayload(p: Record<string, unknown>): boolean {
  if (!isCapability(p.capability) || !isTimestamp(p.deadline)) return false;
  return p.previous_task_id === undefined || isIdentifier(p.previous_task_id);
}

const LEVELS = new Set(['debug', 'info', 'warn', 'error']);

function eventPayload(p: Record<string, unknown>): boolean {
  if (p.percent !== undefined || p.stage !== undefined) return false;
  if (p.state !== undefined && p.state !== 'running' && p.state !== 'cancelling' && p.state !== 'input_required') return false;
  if (p.message !== undefined && !(typeof p.message === 'string' && p.message.length <= 65536)) return false;
  if (p.level !== undefined && !LEVELS.has(p.level as string)) return false;
  switch (p.kind) {
    case 'state':
      return p.state !== undefined;
    case 'output':
      return 'data' in p;
    case 'log':
      return p.message !== undefined;
    default:
      return false;
  }
}

function resultPayload(p: Record<string, unknown>): boolean {
  return p.status === 'completed' && 'output' in p && !('error' in p);
}

/**
 * True when a message certainly satisfies its type's body schema (`<type>.body.schema.json`):
 * task.request, task.accepted, task.event and task.result in their common forms. False means
 * only "ask the validator".
 */
export function surelyValidBody(m: Record<string, unknown>): boolean {
  const p = m.payload;
  if (!isObject(p) || !isIdentifier(m.task_id) || !isSessionId(m.session_id)) return false;
  switch (m.type) {
    case 'task.request':
      return requestPayload(p);
    case 'task.accepted':
      return isCount(m.sequence) && isMessageId(m.reply_to) && acceptedPayload(p);
    case 'task.event':
      return isCount(m.sequence) && eventPayload(p);
    case 'task.result':
      return isCount(m.sequence) && resultPayload(p);
    default:
      return false;
  }
}
