/**
 * The public face for capability authors, floor 2: a handler is `async (input, ctx) => output`;
 * the context streams progress, output and logs, submits plans, gates side effects behind an
 * approved plan, records checkpoints and carries an AbortSignal that fires on cancel, deadline,
 * shutdown and session loss (spec: tasks, plans, durability). Exported by index.ts.
 */
import type { Capability } from '../../schemas/src/index.ts';
import type { Authorization, InputAsk, PlanDecision, PlanDraft } from './model.ts';

export type { InputAsk, PlanDecision, PlanDraft } from './model.ts';

/** Why a task's signal fired. */
export type AbortKind = 'cancel' | 'deadline' | 'shutdown' | 'session_lost' | 'ended';

/** The reason of a task's AbortSignal. */
export class TaskAborted extends Error {
  override name = 'TaskAborted';
  constructor(
    readonly kind: AbortKind,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Thrown by a handler whose work failed while the agent worked as it should: the task ends
 * failed with CAPABILITY_FAILED in a session of 1.1, and with INTERNAL_ERROR in a session of 1.0;
 * not retryable unless `retryable` says the same request may succeed later. Anything else a
 * handler throws is the agent's own failure, INTERNAL_ERROR (spec: errors#capability-failed).
 */
export class CapabilityError extends Error {
  override name = 'CapabilityError';
  /** True only when the failure was transient and the same request may succeed when retried. */
  readonly retryable: boolean;
  readonly details?: Record<string, unknown>;

  constructor(message: string, options: { retryable?: boolean; details?: Record<string, unknown> } = {}) {
    super(message);
    this.retryable = options.retryable ?? false;
    if (options.details !== undefined) this.details = options.details;
  }
}

/** The agent-wide durable key-value store (journaled with a state directory). */
export interface AgentStore {
  get(key: string): unknown;
  /** Sets a value; journaled before it returns. */
  set(key: string, value: unknown): void;
}

/** The handler's view of its task. */
export interface TaskContext {
  readonly taskId: string;
  readonly capability: string;
  /** The principal the task belongs to (spec: sessions#principals). */
  readonly principal: string;
  readonly sessionId: string;
  readonly authorization?: Authorization;
  /** The effective deadline (spec: tasks#deadlines). */
  readonly deadline: Date;
  /** metadata.attempt of the request (1 when absent). */
  readonly attempt: number;
  /** The request's metadata.trace_id and span_id: a task this handler submits elsewhere passes the trace on (spec: mesh#trace). */
  readonly trace?: { trace_id: string; span_id?: string };
  /**
   * In a session of 1.1, the request's W3C trace context; a sub-task this handler submits takes
   * `childTraceContext(ctx.traceContext, random)`: the same trace, a span of its own (spec: envelope#trace-context).
   */
  readonly traceContext?: { traceparent: string; tracestate?: string; baggage?: string };
  /**
   * TAP 1.1: the delegation of a task this handler submits: this task's delegation path followed by
   * this agent's id. A client or mesh called from the handler sends it by itself (spec: mesh#delegation).
   */
  readonly delegation: readonly string[];
  /** The task this one retries after a retryable ending (spec: idempotency#retryable-endings). */
  readonly previousTaskId?: string;
  /** Fires on cancel, deadline, shutdown or session loss; its reason is a TaskAborted. */
  readonly signal: AbortSignal;
  /** After a restart: the last checkpoint, to continue from (spec: durability#restart). */
  readonly restored?: { state: Record<string, unknown> };
  readonly store: AgentStore;
  /**
   * Sends a progress event (none for a quiet task). A percent is clamped to 0–100, a stage cut to
   * 256 characters and a message to 65,536; a member of another type is left out, and a call with
   * none of the three sends an empty message (spec: tasks#events).
   */
  progress(p: { percent?: number; stage?: string; message?: string }): void;
  /**
   * Sends output; data too large for one message is split across output events (a string into
   * consecutive pieces, an array into consecutive slices); anything else that does not fit
   * throws MESSAGE_TOO_LARGE (spec: limits#message-size). Not sent when the session does not stream.
   * Resolves at once unless the peer has much left unread; then when the connection has room.
   * A handler that sends many events awaits it, and so sends at the pace the peer reads instead
   * of piling up output until the connection is closed as lost (spec: limits#back-pressure).
   */
  output(data: unknown): Promise<void>;
  log(message: string, level?: 'debug' | 'info' | 'warn' | 'error'): void;
  /**
   * Submits a plan and waits for the decision: resolves on approved (the plan is executing)
   * and on needs_revision (submit a changed plan next; it becomes a revision automatically);
   * a rejection ends the task failed PLAN_REJECTED and rejects (spec: plans).
   */
  submitPlan(draft: PlanDraft, feedback?: string): Promise<PlanDecision>;
  /**
   * TAP 1.1: asks the requester for a value and waits for an answer that matches `schema`; the
   * task is input_required meanwhile. Rejects with the signal's reason on cancel, deadline,
   * shutdown or session loss. In a session of 1.0 the task ends failed CAPABILITY_NOT_SUPPORTED
   * and it rejects (spec: tasks#input-required).
   */
  askInput(ask: InputAsk): Promise<unknown>;
  /**
   * Runs a side effect: only when the task has no plan or its plan is approved and executing,
   * after re-checking the deadline; journaled begin and end, so a crash in between ends the task
   * failed and indeterminate, never re-run (spec: plans#gate, durability#indeterminate).
   */
  sideEffect<T>(fn: () => T | Promise<T>): Promise<T>;
  /**
   * Throws PERMISSION_DENIED unless the grant allows acting on `resource`: a grant that lists
   * resources allows only those (spec: authorization#grants).
   */
  checkResource(resource: string): void;
  /** Records where the task stands, for hand-off and restart (spec: shutdown#handoff). */
  checkpoint(state: Record<string, unknown>, steps?: { completed?: string[]; remaining?: string[]; resume_hint?: string }): void;
  /** Waits `ms` on the agent clock; rejects with the signal's reason when it fires. */
  sleep(ms: number): Promise<void>;
  now(): number;
}

/** A capability handler. */
export type Handler = (input: any, ctx: TaskContext) => unknown;

/** A capability given with its card entry; the runtime adds the entry to the card. */
export interface CapabilityDefinition {
  capability: Capability;
  handler: Handler;
  /**
   * A JSON Schema the input must match, checked like `capability.input_schema` (INVALID_MESSAGE)
   * but not published in the card, which keeps handshake.ack small.
   */
  inputSchema?: Record<string, unknown>;
}
