import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TraceRecord } from './trace.ts';
import { readTraceRecords, traceView, type SkippedLine } from './trace-view.ts';

const T = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
const record = (r: Partial<TraceRecord> & Pick<TraceRecord, 'node' | 'dir' | 'type'>, second: number): TraceRecord => ({
  time: `2026-12-07T10:00:${String(second).padStart(2, '0')}.000Z`,
  trace_id: T,
  ...r,
});
/** The requester's record of a sent request, span `span` to `peer`. */
const sent = (span: string, peer: string, second: number) =>
  record({ node: 'coordinator', dir: 'sent', type: 'task.request', span_id: span, peer, task_id: `task-${span}` }, second);

describe('a trace rebuilt from its records (spec: mesh#trace-records)', () => {
  it("says where a span with no ending breaks, from its agent's own records of the trace", () => {
    const view = traceView(T, [
      // s1: the agent ran it and sent its result, which the requester never recorded.
      sent('s1', 'worker.a', 1),
      record({ node: 'worker.a', dir: 'received', type: 'task.request', span_id: 's1', peer: 'coordinator' }, 2),
      record({ node: 'worker.a', dir: 'sent', type: 'task.result', span_id: 's1', peer: 'coordinator', status: 'completed' }, 3),
      // s2: the agent recorded the request and nothing since.
      sent('s2', 'worker.a', 4),
      record({ node: 'worker.a', dir: 'received', type: 'task.request', span_id: 's2', peer: 'coordinator' }, 5),
      // s3: the agent, which records the trace, never saw the request.
      sent('s3', 'worker.a', 6),
      // s4: an agent that writes no records: nothing more can be said.
      sent('s4', 'worker.b', 7),
    ]);
    expect(view.problems).toEqual([
      'span s1 (coordinator → worker.a, task task-s1) has no ending: worker.a sent its task.result (completed) at 2026-12-07T10:00:03.000Z, which coordinator recorded no receipt of',
      'span s2 (coordinator → worker.a, task task-s2) has no ending: worker.a recorded its task.request at 2026-12-07T10:00:05.000Z and no ending since (still running there, or the agent stopped)',
      'span s3 (coordinator → worker.a, task task-s3) has no ending: worker.a recorded no task.request of it (the request did not reach it)',
      'span s4 (coordinator → worker.b, task task-s4) has no ending',
    ]);
  });

  it("is complete when the requester recorded every ending, whatever the agent's records say", () => {
    const view = traceView(T, [
      sent('s1', 'worker.a', 1),
      record({ node: 'worker.a', dir: 'received', type: 'task.request', span_id: 's1', peer: 'coordinator' }, 2),
      record({ node: 'worker.a', dir: 'sent', type: 'task.result', span_id: 's1', peer: 'coordinator', status: 'failed' }, 3),
      record({ node: 'coordinator', dir: 'received', type: 'task.result', span_id: 's1', peer: 'worker.a', status: 'failed' }, 4),
    ]);
    expect(view.problems).toEqual([]);
    expect(view.spans[0]!.end).toMatchObject({ type: 'task.result', status: 'failed' });
  });
});

describe('trace-record files (spec: mesh#trace-records)', () => {
  it('reads the records of traces, says which lines hold no record, and leaves out records of no trace', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-trace-records-'));
    try {
      const file = join(dir, 'coordinator.jsonl');
      const lines = [
        JSON.stringify(sent('s1', 'worker.a', 1)),
        JSON.stringify({ time: '2026-12-07T10:00:02.000Z', node: 'coordinator', dir: 'sent', type: 'handshake.init' }),
        '[1, 2]',
        '{"time": "2026-12-07T10:00:03.000Z", "node": "coord',
      ];
      writeFileSync(file, `${lines.join('\n')}\n`);
      const skipped: SkippedLine[] = [];
      const records = readTraceRecords(dir, (s) => skipped.push(s));
      expect(records.map((r) => r.span_id)).toEqual(['s1']);
      expect(skipped.map((s) => `${s.line}: ${s.reason.replace(/ \(.*/, '')}`)).toEqual(['3: not a trace record', '4: not JSON']);
      expect(skipped[0]!.file).toBe(file);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
