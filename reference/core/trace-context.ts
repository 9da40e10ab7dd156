/**
 * W3C Trace Context and Baggage as TAP 1.1 carries them in `metadata`: the members, the check
 * that a traceparent agrees with trace_id and span_id, a fresh traceparent for a new task, and the
 * traceparent of a sub-task (spec: envelope#trace-context).
 */
import { extended } from './extended.ts';
import type { RandomSource } from './ids.ts';

/** The character codes of the lowercase hex digits. */
const DIGITS = Uint8Array.from('0123456789abcdef', (c) => c.charCodeAt(0));
const ascii = new TextDecoder();
/** The characters of a traceparent of version 00, sampled, written in place: "00-" trace-id "-" parent-id "-01". */
const TRACEPARENT_CHARS = Uint8Array.from('00-00000000000000000000000000000000-0000000000000000-01', (c) => c.charCodeAt(0));

/** Writes `bytes` as lowercase hex into `out` from `at`. */
function writeHex(bytes: Uint8Array, from: number, to: number, out: Uint8Array, at: number): void {
  for (let i = from; i < to; i++) {
    const b = bytes[i]!;
    out[at++] = DIGITS[b >> 4]!;
    out[at++] = DIGITS[b & 15]!;
  }
}

/** Bytes as lowercase hex, made as one flat string. */
function bytesToHex(bytes: Uint8Array): string {
  const out = new Uint8Array(bytes.length * 2);
  writeHex(bytes, 0, bytes.length, out, 0);
  return ascii.decode(out);
}

/** True when bytes[from, to) holds a byte other than zero. */
function anyNonZero(bytes: Uint8Array, from: number, to: number): boolean {
  let any = 0;
  for (let i = from; i < to; i++) any |= bytes[i]!;
  return any !== 0;
}

/** The trace context members of a message's metadata. */
export interface TraceContext {
  traceparent: string;
  tracestate?: string;
  baggage?: string;
}

/** The members of metadata that carry the trace context, in the order they are written. */
export const TRACE_CONTEXT_MEMBERS = ['traceparent', 'tracestate', 'baggage'] as const;

/** Version 00 of traceparent: trace-id and parent-id not all zero (the schema's TRACEPARENT, spec: envelope#trace-context). */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The fields of a well-formed traceparent, or null. */
export function parseTraceparent(text: unknown): { traceId: string; parentId: string; flags: string } | null {
  const m = typeof text === 'string' ? TRACEPARENT.exec(text) : null;
  if (!m || /^0+$/.test(m[1]!) || /^0+$/.test(m[2]!)) return null;
  return { traceId: m[1]!, parentId: m[2]!, flags: m[3]! };
}

/** The trace context of a message's metadata: its traceparent with what goes with it, or undefined without one. */
export function traceContextOf(metadata: Record<string, unknown> | undefined): TraceContext | undefined {
  if (typeof metadata?.traceparent !== 'string') return undefined;
  const out: TraceContext = { traceparent: metadata.traceparent };
  if (typeof metadata.tracestate === 'string') out.tracestate = metadata.tracestate;
  if (typeof metadata.baggage === 'string') out.baggage = metadata.baggage;
  return out;
}

/**
 * What makes a metadata's traceparent disagree with its trace_id or span_id, as a sentence, or
 * null when they agree or one is absent (spec: envelope#trace-context).
 */
export function traceDisagreement(metadata: Record<string, unknown> | undefined): string | null {
  // Nothing to disagree with: the traceparent's form is the schema's to judge.
  if (typeof metadata?.trace_id !== 'string' && typeof metadata?.span_id !== 'string') return null;
  const tp = parseTraceparent(metadata.traceparent);
  if (!tp) return null;
  if (typeof metadata?.trace_id === 'string' && metadata.trace_id !== tp.traceId)
    return `metadata.trace_id ${JSON.stringify(metadata.trace_id)} differs from the trace-id ${tp.traceId} of metadata.traceparent`;
  if (typeof metadata?.span_id === 'string' && metadata.span_id !== tp.parentId)
    return `metadata.span_id ${JSON.stringify(metadata.span_id)} differs from the parent-id ${tp.parentId} of metadata.traceparent`;
  return null;
}

/** `n` random bytes as lowercase hex, never all zero. */
function randomHex(random: RandomSource, n: number): string {
  for (;;) {
    const bytes = random(n);
    if (anyNonZero(bytes, 0, bytes.length)) return bytesToHex(bytes);
  }
}

/**
 * The traceparent of a new task: its own trace-id (or `traceId` when it is one, such as a given
 * metadata.trace_id) and a new parent-id (or `spanId` when it is one), sampled (spec: envelope#trace-context).
 */
export function newTraceparent(random: RandomSource, traceId?: string, spanId?: string): string {
  // A new trace and span, the usual case: 24 random bytes written into one string.
  if (traceId === undefined && spanId === undefined) {
    for (;;) {
      const bytes = random(24);
      if (!anyNonZero(bytes, 0, 16) || !anyNonZero(bytes, 16, 24)) continue;
      writeHex(bytes, 0, 16, TRACEPARENT_CHARS, 3);
      writeHex(bytes, 16, 24, TRACEPARENT_CHARS, 36);
      return ascii.decode(TRACEPARENT_CHARS);
    }
  }
  const t = traceId !== undefined && /^[0-9a-f]{32}$/.test(traceId) && !/^0+$/.test(traceId) ? traceId : randomHex(random, 16);
  const s = spanId !== undefined && /^[0-9a-f]{16}$/.test(spanId) && !/^0+$/.test(spanId) ? spanId : randomHex(random, 8);
  return `00-${t}-${s}-01`;
}

/**
 * The trace context of a sub-task an agent submits as part of its own task: the same trace-id,
 * flags, tracestate and baggage, and a parent-id of the agent's own (spec: envelope#trace-context).
 */
export function childTraceContext(parent: TraceContext, random: RandomSource): TraceContext {
  const tp = parseTraceparent(parent.traceparent);
  if (!tp) throw new Error(`not a traceparent of version 00: ${JSON.stringify(parent.traceparent)}`);
  let span = randomHex(random, 8);
  while (span === tp.parentId) span = randomHex(random, 8);
  return extended(parent, { traceparent: `00-${tp.traceId}-${span}-${tp.flags}` });
}
