/**
 * How a handle answers its task's plans and input requests: with the caller's callback when
 * `submit` was given one, else by telling the client's listeners; a callback that throws rejects
 * the plan, and an answer the agent refuses is logged (spec: plans#decision, tasks#input-required).
 */
import type { TaskHost } from './task-host.ts';
import type { InputRequestPayload, PlanDecision, PlanSubmitPayload, SnapshotPayload } from './types.ts';

/** What the answerers need of a handle; `H` is the handle itself, as the callbacks receive it. */
export interface Answerable<H> {
  readonly self: H;
  readonly taskId: string;
  readonly host: TaskHost<H>;
  /** True once the task ended, or the plan was decided already. */
  settled(planId?: string): boolean;
  decide(planId: string, decision: PlanDecision): Promise<SnapshotPayload>;
  answer(value: unknown, requestId?: string): Promise<SnapshotPayload>;
}

/** Answers a plan.submit with `callback`, or hands it to the client's listeners. */
export function answerPlan<H>(
  h: Answerable<H>,
  plan: PlanSubmitPayload,
  callback?: (plan: PlanSubmitPayload, handle: H) => PlanDecision | Promise<PlanDecision>,
): void {
  const planId = plan.plan.plan_id;
  if (!callback) {
    if (!h.host.planSubmitted(h.self, plan))
      h.host.logger?.('warn', 'a plan waits for a decision and nobody listens', { task_id: h.taskId, plan_id: planId });
    return;
  }
  void (async () => {
    let decision: PlanDecision;
    try {
      decision = await callback(plan, h.self);
    } catch (err) {
      decision = { decision: 'rejected', feedback: `the approval callback failed: ${(err as Error).message}` };
    }
    if (h.settled(planId)) return;
    try {
      await h.decide(planId, decision);
    } catch (err) {
      h.host.logger?.('warn', 'the plan decision was refused', { task_id: h.taskId, plan_id: planId, error: (err as Error).message });
    }
  })();
}

/** TAP 1.1: answers an input request with `callback`, or hands it to the client's listeners. */
export function answerInput<H>(
  h: Answerable<H>,
  request: InputRequestPayload,
  callback?: (request: InputRequestPayload, handle: H) => unknown,
): void {
  if (!callback) {
    if (!h.host.inputRequested(h.self, request))
      h.host.logger?.('warn', 'a task waits for input and nobody listens', { task_id: h.taskId, request_id: request.request_id });
    return;
  }
  void (async () => {
    try {
      await h.answer(await callback(request, h.self), request.request_id);
    } catch (err) {
      const error = (err as Error).message;
      h.host.logger?.('warn', 'the answer to the input request was not taken', {
        task_id: h.taskId,
        request_id: request.request_id,
        error,
      });
    }
  })();
}
