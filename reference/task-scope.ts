/**
 * The task a handler runs for, as the tasks it submits see it: an agent runs each handler inside
 * its task's scope, and a client or mesh that submits from there takes the delegation path and
 * the trace context from it without being asked (spec: mesh#delegation, envelope#trace-context).
 *
 * A scope costs every promise of the process a hook on Node 20, a tenth of an agent's rate: it is
 * kept only once the process has something that reads it, a client or a mesh. One made while
 * handlers already run cannot reach back into them: it says so once, as a process warning.
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

/** The code of the warning for a client or mesh made while handlers ran without a scope. */
export const LATE_SCOPE_WARNING = 'TAP_LATE_TASK_SCOPE';

const storage = new AsyncLocalStorage<TaskScope>();
/** Whether a client or mesh exists in this process, so that handlers run in their task's scope. */
let wanted = false;
/** Handlers running now outside a scope (before anything wanted one). */
let unscoped = 0;

/**
 * Runs `fn` (a handler) inside the scope of its task once the process has a client or a mesh —
 * what it submits, however deep in its awaits, sees the scope; `scope` is made only then — and
 * passes its outcome to `settled` once: what it returned, awaited when it is a thenable, or what
 * it threw. A value that is no thenable settles it at once, within this call, with no promise
 * made. `settled` must not throw.
 */
export function runHandler(scope: () => TaskScope, fn: () => unknown, settled: (value: unknown, threw: boolean) => void): void {
  const scoped = wanted;
  if (!scoped) unscoped++;
  const end = (value: unknown, threw: boolean): void => {
    if (!scoped) unscoped--;
    settled(value, threw);
  };
  let out: unknown;
  let thenable: boolean;
  try {
    out = scoped ? storage.run(scope(), fn) : fn();
    thenable = isThenable(out); // reading `then` may throw, as a promise adopting it would
  } catch (err) {
    return end(err, true);
  }
  if (!thenable) return end(out, false);
  // Promise.resolve settles once, even for a thenable whose then throws or calls back twice.
  void Promise.resolve(out).then(
    (value) => end(value, false),
    (err: unknown) => end(err, true),
  );
}

/** True for what a promise would adopt: an object or function with a `then` method. */
function isThenable(v: unknown): boolean {
  return (typeof v === 'object' || typeof v === 'function') && v !== null && typeof (v as { then?: unknown }).then === 'function';
}

/**
 * Called by each client and mesh as it is made: from now on handlers run in their task's scope.
 * Handlers that run already do not: what they submit carries neither their delegation path nor
 * their trace, and a process warning says so, naming `what` was made.
 */
export function wantTaskScopes(what: string): void {
  if (wanted) return;
  wanted = true;
  if (unscoped > 0) {
    process.emitWarning(
      `${what} was made while ${unscoped} task handler(s) of this process ran: what they submit through it carries neither their delegation path nor their trace (spec: mesh#delegation); tasks that start from now on do. Make clients and meshes before the agent takes tasks.`,
      { code: LATE_SCOPE_WARNING },
    );
  }
}

/** The scope of the task whose handler is running here, if any. */
export function currentTaskScope(): TaskScope | undefined {
  return wanted ? storage.getStore() : undefined;
}
