/**
 * The task a handler runs for, as the tasks it submits see it: an agent runs each handler inside
 * its task's scope, and a client or mesh that submits from there takes the delegation path and
 * the trace context from it without being asked (spec: mesh#delegation, envelope#trace-context).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { TraceContext } from './core/trace-context.ts';
import type { TapSpan } from './telemetry.ts';

/** What a task passes on to the tasks submitted while its handler runs. */
export interface TaskScope {
  /** The agent whose task it is. */
  readonly agentId: string;
  /** The delegation of a task submitted from here: the task's own path followed by the agent's id (spec: mesh#delegation). */
  readonly delegation: readonly string[];
  /** The task's trace (spec: mesh#trace): a sub-task keeps its trace_id, with its span as parent_span_id (TAP-MESH-020). */
  readonly trace?: { trace_id: string; span_id?: string } | undefined;
  /** The task's 1.1 trace context, as its request carried it. */
  readonly traceContext?: TraceContext | undefined;
  /** The task's span, when the agent traces with OpenTelemetry: the parent of what is submitted from here. */
  readonly span?: TapSpan | undefined;
}

const storage = new AsyncLocalStorage<TaskScope>();

/** Runs `fn` (a handler) inside a task's scope; what it submits, however deep in its awaits, sees the scope. */
export function runInTaskScope<T>(scope: TaskScope, fn: () => T): T {
  return storage.run(scope, fn);
}

/** The scope of the task whose handler is running here, if any. */
export function currentTaskScope(): TaskScope | undefined {
  return storage.getStore();
}
