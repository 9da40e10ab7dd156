/**
 * What a copy of a mesh submission needs of the mesh that runs it, and what it records of each
 * attempt (spec: mesh#moving, mesh#routing).
 */
import type { PlanDecision, PlanSubmitPayload, TapClient, TaskHandle } from '../client/index.ts';
import type { TraceContext } from '../core/trace-context.ts';
import type { TapSpan } from '../telemetry.ts';
import type { MeshEntry } from './registry-view.ts';
import type { Span } from './trace.ts';

/** One attempt of a copy: where it ran and how it ended. */
export interface Hop {
  agentId: string;
  instance: string;
  taskId: string;
  attempt: number;
  span: Span;
  /** The attempt's OpenTelemetry span, when the mesh traces. */
  otel?: TapSpan;
  /** How the attempt ended: its result status, the error code, or 'moved' / 'lost' / 'refused'. */
  outcome?: string;
}

/**
 * An agent routing chose for an attempt. The copy counts in flight there from the moment it was
 * chosen, not from when its request went out: copies routed while another waited for its session
 * see it (TAP-MESH-003).
 */
export interface Picked {
  entry: MeshEntry;
  /** Uncounts the copy; a second call does nothing. */
  release(): void;
}

/** What a copy needs of the mesh that runs it. */
export interface CopyHost {
  /** The next agent for this copy, avoiding `exclude`, counted in flight there; undefined when there is none. */
  pick(capability: string, exclude: ReadonlySet<string>): Promise<Picked | undefined>;
  client(entry: MeshEntry): Promise<TapClient>;
  /** No session could be opened to the entry's agent, or it was down before a request went out: later routing avoids it (TAP-MESH-025). */
  unreachable?(entry: MeshEntry): void;
  /** Agents other copies of the same submission hold (TAP-MESH-005, TAP-MESH-014). */
  siblings(): ReadonlySet<string>;
  /** Records an ending the requester decided: the agent was lost, and the attempt moved or ended indeterminate. */
  ended(span: Span, taskId: string, agentId: string, code: string, status: 'moved' | 'indeterminate'): void;
  sleep(ms: number): Promise<void>;
  readonly maxAttempts: number;
  /** How long a copy that reached no agent waits for discovery to list one it has not tried (TAP-MESH-024). */
  readonly unreachedWaitMs: number;
  /** Starts the OpenTelemetry span of one attempt, when the mesh traces (spec: mesh#hop-trace-context). */
  hopSpan?(attempt: { capability: string; agentId: string; attempt: number; idempotencyKey: string }): TapSpan | undefined;
}

/** Options of one copy. */
export interface CopyOptions {
  idempotencyKey: string;
  traceId: string;
  /** The span whose work caused this copy (a router's own task), if any (TAP-MESH-020). */
  parentSpanId?: string;
  timeoutMs?: number;
  onPlan?: (plan: PlanSubmitPayload, handle: TaskHandle) => PlanDecision | Promise<PlanDecision>;
  /** TAP 1.1: each attempt is a quiet task where its hop's session negotiated 1.1 (spec: mesh#quiet-copies). */
  quiet?: boolean;
  /** The agent routing chose for the first attempt, counted in flight there. */
  first?: Picked;
  /** TAP 1.1: the trace context the copy continues: each attempt's traceparent is of its own span in it (TAP-TRACE-107). */
  traceContext?: TraceContext;
  /** TAP 1.1: the delegation path every attempt carries (spec: mesh#delegation). */
  delegation?: readonly string[];
}
