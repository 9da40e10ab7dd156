/**
 * OpenTelemetry spans for TAP, on the optional peer @opentelemetry/api: loaded only when an
 * agent, client, mesh or durable runner is given `telemetry`, never by importing the package.
 * A span is parented through the W3C trace context TAP 1.1 carries (spec: envelope#trace-context,
 * mesh#hop-trace-context), and its `traceparent` is what the next hop carries.
 */
import type { Context, Span, SpanKind as SpanKindValue, Tracer } from '@opentelemetry/api';
import { extended } from './core/extended.ts';
import { parseTraceparent, type TraceContext } from './core/trace-context.ts';
import { MissingPeerError, optionalImport } from './peers.ts';

/** The OpenTelemetry API package, as package.json's peerDependencies name it. */
export const OPENTELEMETRY_PEER = '@opentelemetry/api@>=1.9.0 <1.10.0';

/** The instrumentation scope of TAP's spans. */
export const TELEMETRY_SCOPE = 'tap-agent-protocol';

/**
 * A tracer of OpenTelemetry, as `Tracer` of @opentelemetry/api is one. The package's declarations
 * name this shape, not the optional peer's types, so that a program without the peer compiles
 * against them with skipLibCheck off.
 */
export interface OtelTracer {
  startSpan(name: string, options?: object, context?: object): OtelSpanHandle;
}

/** A span of OpenTelemetry, as `Span` of @opentelemetry/api is one (see OtelTracer). */
export interface OtelSpanHandle {
  spanContext(): { traceId: string; spanId: string; traceFlags: number };
  isRecording(): boolean;
  setAttribute(key: string, value: string | number | boolean): unknown;
  setAttributes(attributes: Record<string, string | number | boolean>): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  end(): void;
}

/**
 * Tracing with OpenTelemetry: `{}` uses the global tracer provider (the one an OpenTelemetry SDK
 * registered), `{ tracer }` a tracer of your own (a `Tracer` of @opentelemetry/api). Without the
 * option nothing is traced and @opentelemetry/api is not loaded.
 */
export interface TelemetryOptions {
  tracer?: OtelTracer;
}

/** What a span is made under: a W3C trace context that came on the wire, or a span of this process. */
export interface SpanParent {
  traceContext?: TraceContext | undefined;
  span?: TapSpan | undefined;
}

/** How a unit of TAP work ended, as its span records it. */
export interface SpanOutcome {
  /** The result's status (completed, failed, …) or what the requester decided (moved, lost, refused). */
  outcome: string;
  /** The error code, when it ended with one. */
  code?: string | undefined;
}

/** One span of TAP work: its W3C trace context, for the messages it sends, and its end. */
export interface TapSpan {
  /** The span as OpenTelemetry holds it (a `Span` of @opentelemetry/api). */
  readonly span: OtelSpanHandle;
  readonly traceId: string;
  readonly spanId: string;
  /** The trace context a request sent under this span carries: its traceparent, and the parent's tracestate and baggage. */
  readonly traceContext: TraceContext;
  setAttributes(attributes: Record<string, string | number | boolean>): void;
  /** Ends the span with `tap.outcome`, `error.type` and an error status unless it completed; a second call does nothing. */
  end(outcome: SpanOutcome): void;
}

/** The kinds of span TAP makes. */
export type SpanRole = 'client' | 'server' | 'consumer' | 'internal';

/** Starts TAP's spans on one tracer. */
export interface Telemetry {
  /**
   * Starts a span named `name` under `parent` (or under the active context when it gives none),
   * or returns undefined when the tracer records nothing (no SDK registered): the caller then
   * carries the trace context as it would without telemetry.
   */
  start(name: string, role: SpanRole, parent: SpanParent, attributes: Record<string, string | number | boolean>): TapSpan | undefined;
}

type Api = typeof import('@opentelemetry/api');

/** Loads @opentelemetry/api and makes the Telemetry of `options`; throws MissingPeerError when it is not installed. */
export async function loadTelemetry(options: TelemetryOptions): Promise<Telemetry> {
  const api = await optionalImport<Api>(() => import('@opentelemetry/api'));
  if (!api) throw new MissingPeerError('tracing with OpenTelemetry (the telemetry option)', [OPENTELEMETRY_PEER]);
  // A tracer given is one of the API's (OtelTracer is its shape).
  const tracer = (options.tracer as Tracer | undefined) ?? api.trace.getTracer(TELEMETRY_SCOPE);
  return new OtelTelemetry(api, tracer);
}

class OtelTelemetry implements Telemetry {
  private readonly kinds: Record<SpanRole, SpanKindValue>;

  constructor(
    private readonly api: Api,
    private readonly tracer: Tracer,
  ) {
    this.kinds = {
      client: api.SpanKind.CLIENT,
      server: api.SpanKind.SERVER,
      consumer: api.SpanKind.CONSUMER,
      internal: api.SpanKind.INTERNAL,
    };
  }

  start(name: string, role: SpanRole, parent: SpanParent, attributes: Record<string, string | number | boolean>): TapSpan | undefined {
    const parentContext = this.contextOf(parent);
    const span = this.tracer.startSpan(name, { kind: this.kinds[role], attributes }, parentContext);
    const sc = span.spanContext();
    // A tracer that records nothing hands back its parent's ids: no span of its own to put on the wire.
    const parentId = this.api.trace.getSpanContext(parentContext)?.spanId;
    if (!span.isRecording() || !this.api.isSpanContextValid(sc) || sc.spanId === parentId) {
      span.end();
      return undefined;
    }
    const flags = sc.traceFlags.toString(16).padStart(2, '0');
    const traceContext: TraceContext = extended(parent.traceContext, { traceparent: `00-${sc.traceId}-${sc.spanId}-${flags}` });
    if (!parent.traceContext && parent.span) Object.assign(traceContext, withoutParent(parent.span.traceContext));
    return new OtelSpan(this.api, span, sc.traceId, sc.spanId, traceContext);
  }

  /** The context a span starts in: its parent span, the remote span of a traceparent, or the active context. */
  private contextOf(parent: SpanParent): Context {
    const { api } = this;
    // A TapSpan's span is one this module started: a Span of the API.
    if (parent.span) return api.trace.setSpan(api.context.active(), parent.span.span as Span);
    const tp = parseTraceparent(parent.traceContext?.traceparent);
    if (!tp) return api.context.active();
    const traceState = parent.traceContext?.tracestate;
    return api.trace.setSpanContext(api.ROOT_CONTEXT, {
      traceId: tp.traceId,
      spanId: tp.parentId,
      traceFlags: Number.parseInt(tp.flags, 16),
      isRemote: true,
      ...(traceState ? { traceState: api.createTraceState(traceState) } : {}),
    });
  }
}

/** The tracestate and baggage of a trace context, without its traceparent. */
function withoutParent(context: TraceContext): Omit<TraceContext, 'traceparent'> {
  const { traceparent: _, ...rest } = context;
  return rest;
}

class OtelSpan implements TapSpan {
  private ended = false;

  constructor(
    private readonly api: Api,
    readonly span: Span,
    readonly traceId: string,
    readonly spanId: string,
    readonly traceContext: TraceContext,
  ) {}

  setAttributes(attributes: Record<string, string | number | boolean>): void {
    this.span.setAttributes(attributes);
  }

  end(outcome: SpanOutcome): void {
    if (this.ended) return;
    this.ended = true;
    this.span.setAttribute('tap.outcome', outcome.outcome);
    if (outcome.code !== undefined) this.span.setAttribute('error.type', outcome.code);
    if (outcome.outcome !== 'completed')
      this.span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: outcome.code ?? outcome.outcome });
    this.span.end();
  }
}
