/**
 * OpenTelemetry spans across a mesh over a real NATS server: a routed task's spans chain
 * requester → hop → agent, each attempt's traceparent names its own span in the requester's
 * trace (TAP-TRACE-107), and a copy that moves gets a second hop span under the same parent
 * (spec: mesh#hop-trace-context, mesh#moving).
 */
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { lacks, needing } from '../../test/system-tools.testkit.ts';
import { natsServerInstalled, NO_NATS_SERVER } from '../transports/nats/nats-server.testkit.ts';
import type { Mesh } from './mesh.ts';
import { MemoryRegistry, meshTestBed, type MeshTestAgent } from './mesh.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

const exporter = new InMemorySpanExporter();
const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('test');
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
const idOf = (s: ReadableSpan) => s.spanContext().spanId;

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'OpenTelemetry spans across the mesh (spec: mesh#hop-trace-context)'), () => {
  const bed = meshTestBed();

  const agent = (id: string): Promise<MeshTestAgent> => bed.agent(id, {}, { telemetry: { tracer } });

  const mesh = (registry: MemoryRegistry): Mesh => bed.mesh({ registry, agentId: 'otel.requester', telemetry: { tracer } });

  /** The requester's own span, and the trace context a submission under it continues. */
  function requesterSpan(name: string) {
    const span = tracer.startSpan(name);
    const { traceId, spanId } = span.spanContext();
    return { span, traceId, spanId, traceContext: { traceparent: `00-${traceId}-${spanId}-01`, tracestate: 'tap=otel' } };
  }

  it('a routed task gives spans that chain requester → hop → agent, and the request carries the hop span (TAP-TRACE-107)', async () => {
    const registry = new MemoryRegistry();
    registry.put((await agent('otel.a')).entry);
    const m = mesh(registry);
    const requester = requesterSpan('requester');
    const t = await m.task('tap.test.echo', { hello: 1 }, { traceContext: requester.traceContext });
    expect((await t.result).status).toBe('completed');
    requester.span.end();
    const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === requester.traceId);
    const hop = spans.find((s) => s.name === 'route tap.test.echo')!;
    const task = spans.find((s) => s.name === 'execute tap.test.echo')!;
    expect(parentOf(hop)).toBe(requester.spanId);
    expect(parentOf(task)).toBe(idOf(hop));
    expect(t.hops[0]!.span).toMatchObject({ trace_id: requester.traceId, span_id: idOf(hop), parent_span_id: requester.spanId });
    expect(hop.attributes).toMatchObject({
      'tap.agent': 'otel.a',
      'tap.attempt': 1,
      'tap.task_id': t.hops[0]!.taskId,
      'tap.outcome': 'completed',
    });
    expect(task.attributes).toMatchObject({ 'tap.agent': 'otel.a', 'tap.task_id': t.hops[0]!.taskId, 'tap.outcome': 'completed' });
    // Every message of the attempt carries the hop's traceparent and the requester's tracestate.
    for (const msg of t.log)
      expect(msg.metadata).toMatchObject({ traceparent: `00-${requester.traceId}-${idOf(hop)}-01`, tracestate: 'tap=otel' });
  });

  it('a copy whose agent is lost gets a second attempt span under the same parent, and the agent that ends it a task span under that', async () => {
    const registry = new MemoryRegistry();
    const a = await agent('otel.fo-a');
    const b = await agent('otel.fo-b');
    registry.put(a.entry);
    const m = mesh(registry);
    const requester = requesterSpan('requester-failover');
    const t = await m.task('tap.test.sleep', { ms: 600 }, { traceContext: requester.traceContext });
    await t.accepted;
    registry.put(b.entry);
    registry.expire('otel.fo-a');
    expect((await t.result).status).toBe('completed');
    requester.span.end();
    const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === requester.traceId);
    const hops = spans
      .filter((s) => s.name === 'route tap.test.sleep')
      .sort((x, y) => Number(x.attributes['tap.attempt']) - Number(y.attributes['tap.attempt']));
    expect(hops.map((h) => [h.attributes['tap.agent'], h.attributes['tap.attempt']])).toEqual([
      ['otel.fo-a', 1],
      ['otel.fo-b', 2],
    ]);
    // The first attempt ended as the requester decided (its agent lost, the copy moved), the second completed.
    expect(['lost', 'moved']).toContain(hops[0]!.attributes['tap.outcome']);
    expect(hops[1]!.attributes['tap.outcome']).toBe('completed');
    expect(hops.map(parentOf)).toEqual([requester.spanId, requester.spanId]);
    const ended = spans.find((s) => s.name === 'execute tap.test.sleep' && s.attributes['tap.agent'] === 'otel.fo-b')!;
    expect(parentOf(ended)).toBe(idOf(hops[1]!));
    expect(t.hops.map((h) => h.span.span_id)).toEqual(hops.map(idOf));
  });

  it('a mesh never routes to an agent on the delegation path, and with none left refuses DELEGATION_LOOP unsent (TAP-MESH-152)', async () => {
    const registry = new MemoryRegistry();
    registry.put((await agent('otel.path-a')).entry);
    const m = mesh(registry);
    await expect(m.task('tap.test.echo', 1, { delegation: ['otel.root', 'otel.path-a'] })).rejects.toMatchObject({
      code: 'DELEGATION_LOOP',
      unsent: true,
    });
    const b = await agent('otel.path-b');
    registry.put(b.entry);
    const t = await m.task('tap.test.echo', 2, { delegation: ['otel.root', 'otel.path-a'] });
    expect((await t.result).status).toBe('completed');
    expect(t.agentId).toBe('otel.path-b');
  });
});
