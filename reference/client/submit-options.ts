/**
 * What a caller may ask of a task as it submits it: its ids, grant, timeouts, retries, quiet form
 * and trace, and the callbacks that answer its plans and input requests (spec: tasks, plans#decision);
 * `Handle` is the handle the callbacks are given.
 */
import type { RetryPolicy } from './backoff.ts';
import type { Authorization, InputRequestPayload, PlanDecision, PlanSubmitPayload } from './types.ts';

/** Options of `client.submit`, for handles of type `Handle`. */
export interface SubmitOptionsFor<Handle> {
  /** The task id of the first attempt (default: a fresh one); retries always use fresh ids. */
  taskId?: string;
  /** Makes the request safe to retry (default: a fresh key per submit, shared by its retries). */
  idempotencyKey?: string;
  /** The grant that travels with the task (spec: authorization). */
  authorization?: Authorization;
  /** The task ends timed_out this long after the agent received it (payload timeout_ms). */
  timeoutMs?: number;
  /** The envelope deadline: past it the work is pointless. */
  deadline?: Date | string;
  /** Answers each plan.submit; without it the client emits 'plan' and the caller calls `decide`. */
  onPlan?: (plan: PlanSubmitPayload, handle: Handle) => PlanDecision | Promise<PlanDecision>;
  /** TAP 1.1: answers each input request; without it the client emits 'input' and the caller calls `answer` (spec: tasks#input-required). */
  onInput?: (request: InputRequestPayload, handle: Handle) => unknown;
  /** Overrides the client's retry policy for this task. */
  retry?: Partial<RetryPolicy>;
  /** Extra envelope metadata (trace ids); `attempt`, when given, numbers the first attempt (default 1) and retries count on. */
  metadata?: Record<string, unknown>;
  /** TAP 1.1: the outcome only, no task.accepted and no events; not sent in a 1.0 session (spec: tasks#quiet-tasks). */
  quiet?: boolean;
  /** TAP 1.1: the agents that delegated the task (default: inside a handler, its task's path and agent id; spec: mesh#delegation). */
  delegation?: readonly string[];
}
