/**
 * Turning one inbound frame into a JSON object whose envelope is valid, or into the error that
 * answers it, checking in the order the spec fixes: size, UTF-8, BOM, JSON, top-level object,
 * duplicate member names, I-JSON, envelope schema (spec: errors#order-of-checks).
 */
import type { InboundFrame } from './frame.ts';
import { errorPayload, type ErrorPayload } from './errors.ts';
import { isIdentifier, isMessageId } from './fast-accept.ts';
import { inspectParsed, MAX_NESTING_DEPTH } from './ijson.ts';
import { validateEnvelope, type Issue } from './validate.ts';

/** How decodeFrame judges a frame. */
export interface DecodeOptions {
  /** The negotiated (or default) max_message_bytes: UTF-8 bytes of the JSON text (spec: limits#message-size). */
  maxMessageBytes: number;
  /** Refuse repeated member names as MALFORMED_MESSAGE; required under integrity (spec: integrity#verification). */
  rejectDuplicateMembers?: boolean;
}

/** A decoded message: a JSON object that passed the envelope schema, and its text. */
export interface Decoded {
  ok: true;
  message: Record<string, unknown>;
  text: string;
}

/**
 * A refused frame: the error to answer with, and what could be read of it — the ids to correlate
 * the answer by, and the type, since nothing ever answers an `error` (spec: errors#no-replies-to-errors).
 */
export interface Refused {
  ok: false;
  error: ErrorPayload;
  replyTo?: string;
  taskId?: string;
  type?: string;
  /** The sender's agent id, when it could be read and is well-formed: where an error goes before a session exists (spec: errors#error-target). */
  source?: string;
}

/** The outcome of decodeFrame; it never throws. */
export type DecodeResult = Decoded | Refused;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const lenient = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
const TYPE = /^[a-z]+(\.[a-z]+)*$/;
/** How much of a broken frame is scanned for its top-level ids and type. */
const SCAN_CHARS = 64 * 1024;

/**
 * Decodes one frame. Checks, first failure wins: size (MESSAGE_TOO_LARGE, even for a frame that
 * is also broken) → binary frame, UTF-8, BOM, JSON, top-level object, nesting beyond
 * MAX_NESTING_DEPTH (spec: limits#nesting), duplicate member names when
 * asked (MALFORMED_MESSAGE) → I-JSON (INVALID_MESSAGE) → envelope schema, including the "*" rule
 * (INVALID_MESSAGE with details.issues). `replyTo`, `taskId` and `type` are recovered when
 * readable (spec: errors#order-of-checks).
 */
export function decodeFrame(frame: InboundFrame, options: DecodeOptions): DecodeResult {
  const max = options.maxMessageBytes;
  // A frame carried as a well-formed string within the limit needs no UTF-8 decoding (memory pair).
  if (frame.text !== undefined && !frame.oversized && fitsUtf8(frame.text, max)) {
    return decodeText(frame.text, options.rejectDuplicateMembers ?? false);
  }
  const size = Math.max(frame.byteLength, frame.bytes.length);
  if (frame.oversized || size > max) {
    return refuseFromBytes(
      frame.bytes,
      errorPayload('MESSAGE_TOO_LARGE', `the message has ${frame.oversized ? 'more than ' + max : size} bytes; the limit is ${max}`, {
        max_message_bytes: max,
        byte_length: size,
      }),
    );
  }
  if (frame.binary) {
    return refuseFromBytes(frame.bytes, malformed('binary-frame', 'a binary frame; TAP messages travel as text frames'));
  }
  let text: string;
  try {
    text = utf8.decode(frame.bytes);
  } catch {
    return refuseFromBytes(frame.bytes, malformed('utf-8', 'the frame is not valid UTF-8'));
  }
  return decodeText(text, options.rejectDuplicateMembers ?? false);
}

/**
 * Decodes JSON text that is already a string (a workspace mailbox file, a fixture): every check of
 * decodeFrame after UTF-8 decoding, the size check excepted (spec: errors#order-of-checks).
 */
export function decodeText(text: string, rejectDuplicateMembers = false): DecodeResult {
  if (text.charCodeAt(0) === 0xfeff) {
    return refuseFromText(text, malformed('bom', 'the frame starts with a byte order mark; TAP messages are UTF-8 without BOM'));
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return refuseFromText(text, malformed('json', `the frame is not valid JSON: ${clip((e as Error).message, 160)}`));
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    const what = value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
    return refuseFromText(text, malformed('not-object', `the frame is ${what}; a TAP message is a JSON object`));
  }
  const message = value as Record<string, unknown>;
  {
    const found = inspectParsed(text, message, rejectDuplicateMembers);
    if (found.nesting) {
      const { path } = found.nesting;
      return refuseFrom(
        message,
        malformed('nesting', `the message nests deeper than ${MAX_NESTING_DEPTH} levels; flatten it`, {
          max_depth: MAX_NESTING_DEPTH,
          ...(path ? { path } : {}),
        }),
      );
    }
    if (found.duplicate) {
      const { path, member } = found.duplicate;
      return refuseFrom(
        message,
        malformed('duplicate-member', `member ${JSON.stringify(member)} appears twice in ${path || 'the message'}`, { path, member }),
      );
    }
    if (found.ijson) {
      const issue: Issue = { path: found.ijson.path, keyword: 'i-json', message: found.ijson.message };
      return refuseFrom(
        message,
        errorPayload('INVALID_MESSAGE', `the message is not I-JSON (TAP-ENV-002): at ${issue.path}, ${issue.message}`, { issues: [issue] }),
      );
    }
  }
  const issues = validateEnvelope(message);
  if (issues) {
    if (message.target === '*') {
      for (const issue of issues) if (issue.path === '/target') issue.message = '"*" is a valid target only in handshake.init';
    }
    const first = issues[0]!;
    const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
    return refuseFrom(
      message,
      errorPayload('INVALID_MESSAGE', `the envelope is invalid: ${first.path || '/'} ${first.message}${more}`, { issues }),
    );
  }
  return { ok: true, message, text };
}

/** Serializes a message for sending: plain JSON, no whitespace, no terminator (spec: envelope#encoding). */
export function encodeMessage(msg: object): string {
  return JSON.stringify(msg);
}

/** The UTF-8 length of a text without encoding it: what max_message_bytes counts (spec: limits#message-size). */
export function utf8ByteLength(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) bytes += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 2; // a pair: 4 bytes for 2 code units
      i++;
    } else bytes += 2;
  }
  return bytes;
}

/**
 * True when a text's UTF-8 form has at most `max` bytes, without counting when its length alone
 * settles it: a UTF-16 code unit is 1 to 3 bytes of UTF-8 (spec: limits#message-size).
 */
export function fitsUtf8(text: string, max: number): boolean {
  return text.length * 3 <= max || (text.length <= max && utf8ByteLength(text) <= max);
}

function malformed(reason: string, message: string, extra?: Record<string, unknown>): ErrorPayload {
  return errorPayload('MALFORMED_MESSAGE', message, { reason, ...extra });
}

function refuseFrom(message: Record<string, unknown>, error: ErrorPayload): Refused {
  const out: Refused = { ok: false, error };
  const id = message.message_id;
  if (isMessageId(id)) out.replyTo = id;
  const task = message.task_id;
  if (isIdentifier(task)) out.taskId = task;
  if (typeof message.type === 'string') out.type = message.type;
  const source = message.source;
  if (isIdentifier(source)) out.source = source;
  return out;
}

function refuseFromText(text: string, error: ErrorPayload): Refused {
  const out: Refused = { ok: false, error };
  const members = topLevelStrings(text, SCAN_CHARS);
  const id = members.get('message_id');
  if (isMessageId(id)) out.replyTo = id;
  const task = members.get('task_id');
  if (isIdentifier(task)) out.taskId = task;
  const type = members.get('type');
  if (type !== undefined && TYPE.test(type)) out.type = type;
  const source = members.get('source');
  if (isIdentifier(source)) out.source = source;
  return out;
}

/**
 * The string members of the top-level object of a frame that is not valid JSON, read from its
 * first `limit` characters without recursion; the first of each name wins. Only a member of the
 * top-level object counts, so `"type":"error"` nested in a payload never makes a frame an error
 * (spec: errors#no-replies-to-errors).
 */
export function topLevelStrings(text: string, limit: number): Map<string, string> {
  const out = new Map<string, string>();
  const n = Math.min(text.length, limit);
  let i = 0;
  while (i < n && /\s/.test(text[i]!)) i++;
  if (text[i] !== '{') return out;
  let depth = 0;
  let expectKey = false;
  let key: string | undefined;
  while (i < n) {
    const c = text[i]!;
    if (c === '"') {
      let j = i + 1;
      while (j < n && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      if (j >= n) break;
      if (depth === 1) {
        const literal = parseString(text.slice(i, j + 1));
        if (key !== undefined) {
          if (literal !== undefined && !out.has(key)) out.set(key, literal);
          key = undefined;
        } else if (expectKey) {
          let k = j + 1;
          while (k < n && /\s/.test(text[k]!)) k++;
          if (text[k] === ':') {
            key = literal;
            expectKey = false;
            i = k + 1;
            continue;
          }
        }
      }
      i = j + 1;
      continue;
    }
    if (c === '{' || c === '[') {
      depth++;
      if (depth === 1) expectKey = c === '{';
      key = undefined;
    } else if (c === '}' || c === ']') {
      depth--;
      if (depth <= 0) break;
    } else if (c === ',' && depth === 1) {
      expectKey = true;
      key = undefined;
    } else if (depth === 1 && key !== undefined && !/[\s:]/.test(c)) {
      key = undefined; // a number, literal or broken value: not a string member
    }
    i++;
  }
  return out;
}

function parseString(literal: string): string | undefined {
  try {
    const v: unknown = JSON.parse(literal);
    return typeof v === 'string' ? v : undefined;
  } catch {
    return undefined;
  }
}

function refuseFromBytes(bytes: Uint8Array, error: ErrorPayload): Refused {
  return refuseFromText(lenient.decode(bytes), error);
}

function clip(s: string, n: number): string {
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}
