/**
 * Trace ids and trace records: W3C-shaped ids for `metadata.trace_id` and `span_id`, and one JSON
 * record per message a participant sends or receives (spec: mesh#trace, mesh#trace-records).
 */
import { randomBytes } from '../crypto.ts';

/** The trace of one attempt, as its task.request carries it in `metadata` (spec: mesh#trace). */
export interface Span {
  trace_id: string;
  span_id: string;
  parent_span_id?: string;
}

/** A trace and the span it continues: what a router passes to its onward submissions. */
export interface TraceParent {
  trace_id: string;
  span_id?: string;
}

const HEX_BYTE = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));
/** Random bytes drawn 4 KiB at a time: one call to the generator serves some three hundred ids, not one. */
let pool: Uint8Array = new Uint8Array(0);
let taken = 0;

function hex(n: number): string {
  if (taken + n > pool.length) {
    pool = randomBytes(4096);
    taken = 0;
  }
  let out = '';
  for (let i = taken; i < taken + n; i++) out += HEX_BYTE[pool[i]!]!;
  taken += n;
  return out;
}

/** A fresh trace id: 32 lowercase hex digits, as W3C Trace Context writes them (TAP-MESH-016). */
export function newTraceId(): string {
  return hex(16);
}

/** A fresh span id: 16 lowercase hex digits (TAP-MESH-017). */
export function newSpanId(): string {
  return hex(8);
}

/** One trace record (spec: mesh#trace-records). */
export interface TraceRecord {
  time: string;
  node: string;
  dir: 'sent' | 'received';
  type: string;
  trace_id?: string;
  span_id?: string;
  parent_span_id?: string;
  task_id?: string;
  peer?: string;
  attempt?: number;
  duration_ms?: number;
  status?: string;
  code?: string;
}

/** Where trace records go: a function given each record (off unless the caller gives one). */
export type TraceSink = (record: TraceRecord) => void;

/** A sink that writes each record as one JSON line to a writable (a file stream, stdout). */
export function jsonLines(out: { write(text: string): unknown }): TraceSink {
  return (record) => out.write(`${JSON.stringify(record)}\n`);
}

interface Frame {
  type?: string;
  message_id?: string;
  reply_to?: string;
  task_id?: string;
  source?: string;
  target?: string;
  metadata?: { trace_id?: unknown; span_id?: unknown; parent_span_id?: unknown; attempt?: unknown };
  payload?: { status?: unknown; error?: { code?: unknown }; code?: unknown };
}

/**
 * Turns the frames of one session into trace records: every frame that carries a trace gives one
 * record; replies get the time since their request, results the time since the task's request.
 */
export class FrameRecorder {
  private readonly requests = new Map<string, { at: number; trace: Frame['metadata'] }>();
  private readonly tasks = new Map<string, number>();

  constructor(
    private readonly node: string,
    private readonly sink: TraceSink,
    private readonly now: () => number = Date.now,
  ) {}

  /** Records one frame as it crossed the wire; frames that do not parse or carry no trace are skipped. */
  frame(dir: 'in' | 'out', text: string): void {
    let msg: Frame;
    try {
      msg = JSON.parse(text) as Frame;
    } catch {
      return;
    }
    // A reply without metadata (an error refusing a request) belongs to its request's span.
    const request = msg.reply_to !== undefined ? this.requests.get(msg.reply_to) : undefined;
    const m = typeof msg.metadata?.trace_id === 'string' ? msg.metadata : request?.trace;
    if (typeof m?.trace_id !== 'string' || typeof msg.type !== 'string') return;
    const at = this.now();
    const record: TraceRecord = {
      time: new Date(at).toISOString(),
      node: this.node,
      dir: dir === 'out' ? 'sent' : 'received',
      type: msg.type,
      trace_id: m.trace_id,
    };
    if (typeof m.span_id === 'string') record.span_id = m.span_id;
    if (typeof m.parent_span_id === 'string') record.parent_span_id = m.parent_span_id;
    if (msg.task_id !== undefined) record.task_id = msg.task_id;
    const peer = dir === 'out' ? msg.target : msg.source;
    if (peer !== undefined) record.peer = peer;
    if (typeof m.attempt === 'number' && msg.type === 'task.request') record.attempt = m.attempt;
    if (dir === 'out' && msg.message_id !== undefined) this.requests.set(msg.message_id, { at, trace: m });
    // On either side a result's duration counts from its task.request: sent by a requester, received by an agent.
    if (msg.type === 'task.request' && msg.task_id !== undefined) this.tasks.set(msg.task_id, at);
    if (request) {
      record.duration_ms = at - request.at;
      this.requests.delete(msg.reply_to!);
    }
    if (msg.type === 'task.result' && msg.task_id !== undefined) {
      const sent = this.tasks.get(msg.task_id);
      if (sent !== undefined) record.duration_ms = at - sent;
      this.tasks.delete(msg.task_id);
      if (typeof msg.payload?.status === 'string') record.status = msg.payload.status;
      if (typeof msg.payload?.error?.code === 'string') record.code = msg.payload.error.code;
    }
    if (msg.type === 'error' && typeof msg.payload?.code === 'string') record.code = msg.payload.code;
    this.sink(record);
  }

  /** Records an ending the requester decided itself: an indeterminate loss or a move (spec: mesh#trace-records). */
  ending(span: Span, taskId: string, peer: string, code: string, status: string): void {
    this.sink({
      time: new Date(this.now()).toISOString(),
      node: this.node,
      dir: 'received',
      type: 'mesh.ending',
      ...span,
      task_id: taskId,
      peer,
      status,
      code,
    });
  }
}
