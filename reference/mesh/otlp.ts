/**
 * A trace rebuilt from trace records as OTLP JSON (resourceSpans → scopeSpans → spans), the form
 * an OpenTelemetry collector's OTLP/HTTP receiver accepts at /v1/traces: one resource per node
 * that sent requests, one client span per task.request (spec: mesh#trace-records).
 */
import type { TraceSpan, TraceView } from './trace-view.ts';

/** An OTLP attribute value. */
type AnyValue = { stringValue: string } | { intValue: string };

/** OTLP's span kind CLIENT, and its status codes. */
const KIND_CLIENT = 3;
const STATUS_OK = 1;
const STATUS_ERROR = 2;

/** RFC 3339 time as OTLP's nanoseconds since the epoch, a decimal string. */
function nanos(time: string): string {
  return `${BigInt(Date.parse(time)) * 1_000_000n}`;
}

function attribute(key: string, value: string | number): { key: string; value: AnyValue } {
  return { key, value: typeof value === 'number' ? { intValue: String(value) } : { stringValue: value } };
}

/** One span of the trace in OTLP JSON. */
function otlpSpan(traceId: string, s: TraceSpan): Record<string, unknown> {
  const attributes = [attribute('tap.requester', s.node)];
  if (s.peer !== undefined) attributes.push(attribute('tap.agent', s.peer));
  if (s.task_id !== undefined) attributes.push(attribute('tap.task_id', s.task_id));
  if (s.attempt !== undefined) attributes.push(attribute('tap.attempt', s.attempt));
  const outcome = s.end?.status ?? (s.end ? s.end.type : undefined);
  if (outcome !== undefined) attributes.push(attribute('tap.outcome', outcome));
  if (s.end?.code !== undefined) attributes.push(attribute('error.type', s.end.code));
  const span: Record<string, unknown> = {
    traceId,
    spanId: s.span_id,
    name: `task.request ${s.peer ?? ''}`.trim(),
    kind: KIND_CLIENT,
    startTimeUnixNano: nanos(s.sent),
    endTimeUnixNano: nanos(s.end?.time ?? s.sent),
    attributes,
  };
  if (s.parent_span_id !== undefined) span.parentSpanId = s.parent_span_id;
  if (s.end) span.status = outcome === 'completed' ? { code: STATUS_OK } : { code: STATUS_ERROR, message: s.end.code ?? outcome };
  return span;
}

/** The trace as one OTLP JSON request body: a resource per requesting node, whose service.name is its agent id. */
export function otlpTrace(view: TraceView): { resourceSpans: unknown[] } {
  const byNode = new Map<string, TraceSpan[]>();
  for (const s of view.spans) {
    let list = byNode.get(s.node);
    if (!list) byNode.set(s.node, (list = []));
    list.push(s);
  }
  return {
    resourceSpans: [...byNode].map(([node, spans]) => ({
      resource: { attributes: [attribute('service.name', node)] },
      scopeSpans: [{ scope: { name: 'tap-agent-protocol' }, spans: spans.map((s) => otlpSpan(view.trace_id, s)) }],
    })),
  };
}
