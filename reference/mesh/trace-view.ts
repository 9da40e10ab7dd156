/**
 * Traces rebuilt from trace records: the spans of one trace id with where each went, how it
 * ended and which span caused it, and whether the trace is complete (spec: mesh#trace-records).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { TraceRecord } from './trace.ts';
import { textOrder } from '../core/text-order.ts';

/** One span: one task.request and what became of it. */
export interface TraceSpan {
  span_id: string;
  parent_span_id?: string;
  /** Who sent the request, and to whom. */
  node: string;
  peer?: string;
  task_id?: string;
  attempt?: number;
  sent: string;
  /** How it ended: a task.result, an error refusing the request, or an ending the requester decided. */
  end?: { time: string; type: string; status?: string; code?: string; duration_ms?: number };
}

/** A trace as the records show it. */
export interface TraceView {
  trace_id: string;
  spans: TraceSpan[];
  records: TraceRecord[];
  /** What keeps the trace from being complete; empty when it is complete. */
  problems: string[];
}

/** A line of a trace-record file that holds no record: where it is and why. */
export interface SkippedLine {
  file: string;
  /** 1-based. */
  line: number;
  reason: string;
}

/**
 * Reads the records of traces in the `*.jsonl` files in `dir` (or in one file). A line that is not
 * a record, a JSON object with a `type` (the torn last line of a process that was killed, say), is
 * passed to `onSkipped`; a record without a `trace_id` is of no trace, and left out.
 */
export function readTraceRecords(path: string, onSkipped: (skipped: SkippedLine) => void = () => {}): TraceRecord[] {
  const files = statSync(path).isDirectory()
    ? readdirSync(path)
        .filter((f) => f.endsWith('.jsonl'))
        .sort()
        .map((f) => join(path, f))
    : [path];
  const out: TraceRecord[] = [];
  for (const file of files) {
    const lines = readFileSync(file, 'utf8').split('\n');
    for (const [i, line] of lines.entries()) {
      if (!line.trim()) continue;
      let r: Partial<TraceRecord> | null;
      try {
        r = JSON.parse(line) as Partial<TraceRecord> | null;
      } catch (err) {
        onSkipped({ file, line: i + 1, reason: `not JSON (${(err as Error).message})` });
        continue;
      }
      // A record of a message that carried no trace is a record, of no trace.
      if (typeof r !== 'object' || r === null || typeof r.type !== 'string')
        onSkipped({ file, line: i + 1, reason: 'not a trace record (no type)' });
      else if (typeof r.trace_id === 'string') out.push(r as TraceRecord);
    }
  }
  return out;
}

/** Groups records by trace id and rebuilds each trace. */
export function traces(records: readonly TraceRecord[]): Map<string, TraceView> {
  const by = new Map<string, TraceRecord[]>();
  for (const r of records) {
    if (!r.trace_id) continue;
    let list = by.get(r.trace_id);
    if (!list) by.set(r.trace_id, (list = []));
    list.push(r);
  }
  const out = new Map<string, TraceView>();
  for (const [id, list] of by) out.set(id, traceView(id, list));
  return out;
}

/** Rebuilds one trace from its records (spec: mesh#trace-records). */
export function traceView(traceId: string, records: readonly TraceRecord[]): TraceView {
  const mine = records.filter((r) => r.trace_id === traceId).sort((a, b) => textOrder(a.time, b.time));
  const spans = new Map<string, TraceSpan>();
  for (const r of mine) {
    if (r.type !== 'task.request' || r.dir !== 'sent' || !r.span_id) continue;
    const span: TraceSpan = { span_id: r.span_id, node: r.node, sent: r.time };
    if (r.parent_span_id !== undefined) span.parent_span_id = r.parent_span_id;
    if (r.peer !== undefined) span.peer = r.peer;
    if (r.task_id !== undefined) span.task_id = r.task_id;
    if (r.attempt !== undefined) span.attempt = r.attempt;
    spans.set(r.span_id, span);
  }
  for (const r of mine) {
    if (r.dir !== 'received' || !r.span_id) continue;
    const span = spans.get(r.span_id);
    if (!span || span.end || r.node !== span.node) continue;
    if (r.type === 'task.result' || r.type === 'mesh.ending' || (r.type === 'error' && r.duration_ms !== undefined)) {
      span.end = { time: r.time, type: r.type };
      if (r.status !== undefined) span.end.status = r.status;
      if (r.code !== undefined) span.end.code = r.code;
      if (r.duration_ms !== undefined) span.end.duration_ms = r.duration_ms;
    }
  }
  const problems: string[] = [];
  const list = [...spans.values()];
  if (list.length === 0) problems.push(`no task.request of trace ${traceId} was recorded`);
  // The nodes that recorded this trace: what an agent among them did not record, it did not see.
  const recording = new Set(mine.map((r) => r.node));
  for (const s of list) {
    if (!s.end)
      problems.push(
        `span ${s.span_id} (${s.node} → ${s.peer ?? '?'}, task ${s.task_id ?? '?'}) has no ending${whereItBreaks(s, mine, recording)}`,
      );
    if (s.parent_span_id !== undefined && !spans.has(s.parent_span_id))
      problems.push(`span ${s.span_id} names parent ${s.parent_span_id}, which is not in the trace`);
  }
  return { trace_id: traceId, spans: list, records: mine, problems };
}

/**
 * Where a span with no ending breaks, by what its agent recorded of it, when the agent writes
 * records of the trace (spec: mesh#trace-records): the request never reached it, it is still on
 * it, or its ending never reached the requester. Empty when the agent's records are not there.
 */
function whereItBreaks(span: TraceSpan, records: readonly TraceRecord[], recording: ReadonlySet<string>): string {
  if (span.peer === undefined || !recording.has(span.peer)) return '';
  const at = records.filter((r) => r.node === span.peer && r.span_id === span.span_id);
  const received = at.find((r) => r.dir === 'received' && r.type === 'task.request');
  if (!received) return `: ${span.peer} recorded no task.request of it (the request did not reach it)`;
  const ending = at.find((r) => r.dir === 'sent' && (r.type === 'task.result' || r.type === 'error'));
  if (!ending)
    return `: ${span.peer} recorded its task.request at ${received.time} and no ending since (still running there, or the agent stopped)`;
  const how = ending.status ?? ending.code;
  return `: ${span.peer} sent its ${ending.type}${how ? ` (${how})` : ''} at ${ending.time}, which ${span.node} recorded no receipt of`;
}

/** The trace as indented lines: each span under its parent, with its hop, attempt and ending. */
export function renderTrace(view: TraceView): string[] {
  const children = new Map<string | undefined, TraceSpan[]>();
  const ids = new Set(view.spans.map((s) => s.span_id));
  for (const s of view.spans) {
    const parent = s.parent_span_id !== undefined && ids.has(s.parent_span_id) ? s.parent_span_id : undefined;
    let list = children.get(parent);
    if (!list) children.set(parent, (list = []));
    list.push(s);
  }
  const lines = [`trace ${view.trace_id}: ${view.spans.length} span(s), ${view.problems.length === 0 ? 'complete' : 'INCOMPLETE'}`];
  const walk = (parent: string | undefined, depth: number): void => {
    for (const s of children.get(parent) ?? []) {
      const end = s.end
        ? `${s.end.status ?? s.end.type}${s.end.code ? ` ${s.end.code}` : ''}${s.end.duration_ms !== undefined ? ` in ${s.end.duration_ms} ms` : ''}`
        : 'no ending';
      lines.push(
        `${'  '.repeat(depth + 1)}${s.node} → ${s.peer ?? '?'}  span ${s.span_id}  task ${s.task_id ?? '?'}  attempt ${s.attempt ?? 1}  ${end}`,
      );
      walk(s.span_id, depth + 1);
    }
  };
  walk(undefined, 0);
  for (const p of view.problems) lines.push(`  problem: ${p}`);
  return lines;
}
