/**
 * Plans and their approval: submission (the entry into awaiting_approval), the decision rules,
 * revisions, late approval (holding, with reminders) and withdrawal when the task ends
 * (spec: plans).
 */
import type { PayloadOf } from '../../schemas/src/index.ts';
import { errorPayload, TapError } from '../core/errors.ts';
import { canonicalize } from '../core/jcs.ts';
import { isTerminal } from '../core/states.ts';
import { issueList, validateAgainst } from '../core/validate.ts';
import { TaskAborted } from './handler.ts';
import type { Plan, PlanDecision, PlanDraft, PlanRecord, PlanState } from './model.ts';
import type { Runtime } from './runtime.ts';
import type { TaskHost } from './task-host.ts';
import { currentPlan, type Task } from './tasks.ts';

/** Sets a plan's state and journals it. */
export function markPlan(rt: Runtime, task: Task, plan: PlanRecord, state: PlanState): void {
  plan.state = state;
  rt.persist({ t: 'plan', principal: task.principal, task_id: task.taskId, plan_id: plan.plan.plan_id, state });
}

function stopHolding(rt: Runtime, plan: PlanRecord): void {
  if (plan.holdTimer !== undefined) rt.clock.clearTimeout(plan.holdTimer);
  plan.holdTimer = undefined;
}

/**
 * Submits a plan for the task (spec: plans#submit). After needs_revision the plan is a revision
 * of the last one, naming it and the feedback, and must change at least one field
 * (spec: plans#revision). A restored task re-submitting its pending plan unchanged waits for that
 * plan's decision instead.
 */
export function submitPlan(rt: Runtime, runner: TaskHost, task: Task, draft: PlanDraft, feedback?: string): Promise<PlanDecision> {
  if (task.abort.aborted) return Promise.reject(task.abort.reason);
  const prev = currentPlan(task);
  const fields = planFields(draft);
  if (prev && (prev.state === 'pending' || prev.state === 'holding')) {
    if (task.restored && canonicalize(planFields(prev.plan)) === canonicalize(fields)) {
      return new Promise((resolve, reject) => (prev.waiter = { resolve, reject }));
    }
    return Promise.reject(new Error('a plan of this task already awaits a decision'));
  }
  // spec: plans#submission: from running, or from awaiting_approval for a revision after needs_revision.
  const revising = prev?.state === 'needs_revision' && task.state === 'awaiting_approval';
  if (task.state !== 'running' && !revising) return Promise.reject(new Error(`a plan cannot be submitted while the task is ${task.state}`));
  const plan: Plan = { plan_id: `plan-${task.plans.length + 1}`, ...fields };
  const issues = validateAgainst('plan.schema.json', plan);
  if (issues) {
    return Promise.reject(new TapError('INVALID_MESSAGE', `the plan is invalid: ${issueList(issues)}`, { issues }));
  }
  const record: PlanRecord = { plan, state: 'pending' };
  if (prev?.state === 'needs_revision') {
    if (canonicalize(planFields(prev.plan)) === canonicalize(fields)) {
      return Promise.reject(new Error('a revision must change at least one field of the plan'));
    }
    record.revisionOf = prev.plan.plan_id;
    record.feedback = feedback ?? prev.decisionFeedback ?? 'revised as asked';
  } else if (prev?.state === 'executing' || prev?.state === 'approved') {
    markPlan(rt, task, prev, 'completed');
  }
  task.plans.push(record);
  if (!revising) runner.transition(task, 'awaiting_approval');
  const payload: PayloadOf<'plan.submit'> = { plan };
  if (record.revisionOf !== undefined) {
    payload.revision_of = record.revisionOf;
    payload.feedback = record.feedback;
  }
  const promise = new Promise<PlanDecision>((resolve, reject) => (record.waiter = { resolve, reject }));
  runner.emit(task, 'plan.submit', payload);
  scheduleHolding(rt, runner, task, record);
  return promise;
}

/** Arms the late-approval timer: after request_timeout_ms the plan is holding and reminders follow every heartbeat_ms (spec: plans#late-approval). */
export function scheduleHolding(rt: Runtime, runner: TaskHost, task: Task, plan: PlanRecord): void {
  const session = rt.sessionOf(task);
  if (!session) return;
  const remind = (): void => {
    plan.holdTimer = undefined;
    if (isTerminal(task.state) || (plan.state !== 'pending' && plan.state !== 'holding')) return;
    if (plan.state === 'pending') markPlan(rt, task, plan, 'holding');
    runner.emit(task, 'task.event', {
      kind: 'progress',
      stage: 'plan.holding',
      message: `plan ${plan.plan.plan_id} still awaits a decision`,
    });
    plan.holdTimer = rt.clock.setTimeout(remind, (rt.sessionOf(task) ?? session).params.heartbeat_ms);
  };
  plan.holdTimer = rt.clock.setTimeout(remind, plan.state === 'holding' ? session.params.heartbeat_ms : session.params.request_timeout_ms);
}

/**
 * The plan checks of a plan.decision, after the task checks: the plan must be the task's
 * current one and pending or holding; otherwise PROTOCOL_VIOLATION (spec: plans#decision).
 */
export function checkDecision(task: Task, payload: PayloadOf<'plan.decision'>): TapError | null {
  const plan = currentPlan(task);
  if (!plan || plan.plan.plan_id !== payload.plan_id) {
    return new TapError('PROTOCOL_VIOLATION', `plan ${payload.plan_id} is not a plan of task ${task.taskId} awaiting a decision`, {
      plan_id: payload.plan_id,
    });
  }
  if (plan.state !== 'pending' && plan.state !== 'holding') {
    return new TapError('PROTOCOL_VIOLATION', `plan ${payload.plan_id} is ${plan.state}, not awaiting a decision`, {
      plan_id: payload.plan_id,
      plan_state: plan.state,
    });
  }
  return null;
}

/** Applies a checked decision, after its snapshot reply (spec: plans#decision). */
export function applyDecision(rt: Runtime, runner: TaskHost, task: Task, payload: PayloadOf<'plan.decision'>): void {
  const plan = currentPlan(task)!;
  stopHolding(rt, plan);
  const waiter = plan.waiter;
  plan.waiter = undefined;
  if (payload.decision === 'approved') {
    markPlan(rt, task, plan, 'approved');
    runner.transition(task, 'running');
    markPlan(rt, task, plan, 'executing');
    waiter?.resolve({ plan_id: plan.plan.plan_id, decision: 'approved', feedback: payload.feedback });
  } else if (payload.decision === 'rejected') {
    markPlan(rt, task, plan, 'rejected');
    const details: Record<string, unknown> = { plan_id: plan.plan.plan_id };
    if (payload.feedback !== undefined) details.feedback = payload.feedback;
    runner.finish(task, { status: 'failed', error: errorPayload('PLAN_REJECTED', `plan ${plan.plan.plan_id} was rejected`, details) });
    waiter?.reject(new TaskAborted('ended', 'the plan was rejected'));
  } else {
    plan.decisionFeedback = payload.feedback;
    markPlan(rt, task, plan, 'needs_revision');
    waiter?.resolve({ plan_id: plan.plan.plan_id, decision: 'needs_revision', feedback: payload.feedback });
  }
}

/** A plan still pending or holding when its task ends or starts cancelling is withdrawn (spec: plans#withdrawn). */
export function withdrawPlan(rt: Runtime, task: Task): void {
  const plan = currentPlan(task);
  if (!plan) return;
  stopHolding(rt, plan);
  if (plan.state === 'pending' || plan.state === 'holding') {
    markPlan(rt, task, plan, 'withdrawn');
    const waiter = plan.waiter;
    plan.waiter = undefined;
    waiter?.reject(task.abort.reason ?? new TaskAborted('ended', 'the plan was withdrawn'));
  }
}

function planFields(p: PlanDraft | Plan): PlanDraft {
  const { intent, steps, rollback, estimated_cost, risk_level } = p as Plan;
  return { intent, steps, rollback, estimated_cost, risk_level };
}
