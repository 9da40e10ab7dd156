/** tapctl mesh trace --otlp: a trace of records as OTLP JSON, spans under their parents (spec: mesh#trace-records). */
import { describe, expect, it } from 'vitest';
import { otlpTrace } from './otlp.ts';
import type { TraceRecord } from './trace.ts';
import { traceView } from './trace-view.ts';

const T = '4bf92f3577b34da6a3ce929d0e0e4736';
const rec = (r: Partial<TraceRecord> & Pick<TraceRecord, 'time' | 'node' | 'dir' | 'type'>): TraceRecord => ({ trace_id: T, ...r });

describe('OTLP JSON of a trace', () => {
  it('gives one resource per requesting node and one client span per task.request, with its parent, times, attributes and status', () => {
    const records = [
      rec({
        time: '2026-12-05T08:00:00.000Z',
        node: 'caller',
        dir: 'sent',
        type: 'task.request',
        span_id: 'aaaaaaaaaaaaaaaa',
        peer: 'router',
        task_id: 't1',
        attempt: 1,
      }),
      rec({
        time: '2026-12-05T08:00:00.100Z',
        node: 'router',
        dir: 'sent',
        type: 'task.request',
        span_id: 'bbbbbbbbbbbbbbbb',
        parent_span_id: 'aaaaaaaaaaaaaaaa',
        peer: 'coder',
        task_id: 't2',
        attempt: 1,
      }),
      rec({
        time: '2026-12-05T08:00:00.300Z',
        node: 'router',
        dir: 'received',
        type: 'mesh.ending',
        span_id: 'bbbbbbbbbbbbbbbb',
        status: 'moved',
        code: 'SESSION_LOST',
      }),
      rec({
        time: '2026-12-05T08:00:01.000Z',
        node: 'caller',
        dir: 'received',
        type: 'task.result',
        span_id: 'aaaaaaaaaaaaaaaa',
        status: 'completed',
        duration_ms: 1000,
      }),
    ];
    const body = otlpTrace(traceView(T, records)) as {
      resourceSpans: Array<{ resource: { attributes: unknown[] }; scopeSpans: Array<{ spans: Array<Record<string, unknown>> }> }>;
    };
    expect(body.resourceSpans.map((r) => r.resource.attributes)).toEqual([
      [{ key: 'service.name', value: { stringValue: 'caller' } }],
      [{ key: 'service.name', value: { stringValue: 'router' } }],
    ]);
    const [caller, router] = body.resourceSpans.map((r) => r.scopeSpans[0]!.spans[0]!);
    expect(caller).toMatchObject({
      traceId: T,
      spanId: 'aaaaaaaaaaaaaaaa',
      kind: 3,
      startTimeUnixNano: '1796457600000000000',
      endTimeUnixNano: '1796457601000000000',
      status: { code: 1 },
    });
    expect(caller!.parentSpanId).toBeUndefined();
    expect(router).toMatchObject({
      spanId: 'bbbbbbbbbbbbbbbb',
      parentSpanId: 'aaaaaaaaaaaaaaaa',
      status: { code: 2, message: 'SESSION_LOST' },
    });
    expect(router!.attributes).toEqual(
      expect.arrayContaining([
        { key: 'tap.agent', value: { stringValue: 'coder' } },
        { key: 'tap.attempt', value: { intValue: '1' } },
        { key: 'tap.outcome', value: { stringValue: 'moved' } },
        { key: 'error.type', value: { stringValue: 'SESSION_LOST' } },
      ]),
    );
  });
});
