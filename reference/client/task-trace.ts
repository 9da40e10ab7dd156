/**
 * What a new task's requests carry besides its input: its trace (continuing the task of the
 * handler it is submitted from), its 1.1 trace context with the span that sends it, its delegation
 * path, and the refusal of a task whose path holds the agent (spec: envelope#trace-context,
 * mesh#trace, mesh#delegation).
 */
import {
  childTraceContext,
  negotiatesExtensions,
  newTraceparent,
  TRACE_CONTEXT_MEMBERS,
  traceDisagreement,
  type RandomSource,
} from '../core/index.ts';
import { extended } from '../core/extended.ts';
import { currentTaskScope } from '../task-scope.ts';
import type { TapSpan, Telemetry } from '../telemetry.ts';
import { TapClientError } from './errors.ts';
import type { BegunTask, NewTask } from './task-host.ts';

/** What beginTask needs of its client. */
export interface TaskClient {
  readonly hs?: { version: string; agentId: string } | undefined;
  readonly telemetry?: Telemetry | undefined;
  readonly random: RandomSource;
}

/** The metadata, delegation, span and refusal of a new task of `client`. */
export function beginTask(client: TaskClient, capability: string, given: NewTask): BegunTask & { span?: TapSpan } {
  const scope = currentTaskScope();
  const v11 = negotiatesExtensions(client.hs?.version ?? '1.0');
  let metadata = given.metadata;
  // A task submitted from a handler continues that task's trace, under its span (TAP-MESH-020).
  if (scope?.trace && metadata?.trace_id === undefined && metadata?.traceparent === undefined) {
    const { trace_id, span_id } = scope.trace;
    metadata = extended(metadata, span_id !== undefined ? { trace_id, parent_span_id: span_id } : { trace_id });
  }
  // A caller that fixed the span (span_id or traceparent, as a mesh does for each hop) owns it.
  const chosen = typeof metadata?.span_id === 'string' || typeof metadata?.traceparent === 'string';
  let span: TapSpan | undefined;
  if (client.telemetry && !chosen) {
    const traceId = typeof metadata?.trace_id === 'string' ? metadata.trace_id : undefined;
    const remote = scope?.traceContext ?? (traceId !== undefined ? { traceparent: newTraceparent(client.random, traceId) } : undefined);
    span = client.telemetry.start(`submit ${capability}`, 'client', scope?.span ? { span: scope.span } : { traceContext: remote }, {
      'tap.capability': capability,
      'tap.agent': client.hs?.agentId ?? '',
    });
  }
  // In 1.1 the request's traceparent names the span that sends it: the client's, the handler's task span, or one of its own (TAP-TRACE-105).
  if (v11 && !chosen) {
    const context =
      span?.traceContext ??
      scope?.span?.traceContext ??
      (scope?.traceContext ? childTraceContext(scope.traceContext, client.random) : undefined);
    const withContext = context && extended(metadata, context);
    if (withContext && !traceDisagreement(withContext)) metadata = withContext;
  }
  metadata = taskMetadata(client.hs?.version ?? '1.0', client.random, metadata);
  const delegation = v11 ? (given.delegation ?? scope?.delegation) : undefined;
  const begun: BegunTask & { span?: TapSpan } = { metadata, span };
  if (delegation?.length) begun.delegation = [...delegation];
  // Never to an agent on the task's own path (TAP-MESH-152).
  const agentId = client.hs?.agentId;
  if (agentId !== undefined && begun.delegation?.includes(agentId)) {
    begun.refusal = new TapClientError(
      'DELEGATION_LOOP',
      `${agentId} is already on the delegation path ${begun.delegation.join(' → ')} of this ${capability} task, so it was not sent there; hand the work to an agent outside the path`,
      { unsent: true },
    );
  }
  return begun;
}

/** The metadata of a new task's requests in the session's `version` (spec: envelope#trace-context, versioning#tap-1-1). */
function taskMetadata(
  version: string,
  random: RandomSource,
  given: Record<string, unknown> | undefined,
): Record<string, unknown> | undefined {
  if (!negotiatesExtensions(version)) {
    // Nothing of 1.1 in a session of 1.0 (spec: versioning#tap-1-1).
    if (!given || !TRACE_CONTEXT_MEMBERS.some((m) => m in given)) return given;
    const kept = { ...given };
    for (const m of TRACE_CONTEXT_MEMBERS) delete kept[m];
    return kept;
  }
  if (typeof given?.traceparent === 'string') return given;
  const traceId = typeof given?.trace_id === 'string' ? given.trace_id : undefined;
  const spanId = typeof given?.span_id === 'string' ? given.span_id : undefined;
  const traceparent = newTraceparent(random, traceId, spanId);
  const withContext = extended(given, { traceparent });
  // A trace_id or span_id that cannot be the traceparent's stays alone (spec: envelope#trace-context);
  // without either, traceDisagreement answers at once.
  return traceDisagreement(withContext) ? given : withContext;
}
