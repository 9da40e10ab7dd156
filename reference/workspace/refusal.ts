/**
 * Records no agent may run, and plans that were rejected, end in `failed/` with the reason
 * (spec: bindings-workspace#task-record, plans#decisions, bindings-workspace#approval-and-cancel).
 */
import { forgetPlan, readPlan, type Approval } from './approval.ts';
import type { Claim } from './claim.ts';
import { cloneRecord, isoNow, rejectedRecord, type RecordProblem, type TaskRecord } from './record.ts';
import type { RunnerEvent } from './runner-options.ts';
import { commitTransition, prepare } from './transition.ts';
import type { Workspace } from './workspace.ts';

/** The agent a refusal is made by, and where it reports. */
export interface RefusalContext {
  ws: Workspace;
  agentId: string;
  log(level: 'debug' | 'info' | 'warn' | 'error', message: string): void;
  emit(event: RunnerEvent): void;
}

/**
 * Ends a task whose plan was rejected: `failed/` with PLAN_REJECTED, the handler never called,
 * and the plan and decision files removed (spec: plans#decisions, bindings-workspace#approval-and-cancel).
 */
export async function planRejected(ctx: RefusalContext, claim: Claim, record: TaskRecord, approval: Approval): Promise<void> {
  const plan = approval.plan!;
  const feedback = approval.decision!.feedback;
  const message = `plan "${plan.plan_id}" of phase ${JSON.stringify(record.next_phase)} was rejected${feedback ? `: ${feedback}` : ''}`;
  const next = cloneRecord(record);
  next.state = {
    ...next.state,
    epoch: claim.epoch,
    status: 'failed',
    processed_by: ctx.agentId,
    last_error: { code: 'PLAN_REJECTED', message: message.slice(0, 8192), at: isoNow() },
  };
  const out = await commitTransition(ctx.ws, claim, prepare(next), ctx.agentId);
  if (!out.ok) return;
  await forgetPlan(ctx.ws, claim.taskId, plan.plan_id);
  ctx.log('info', `${claim.taskId}: ${message}`);
  ctx.emit({
    type: 'finished',
    task_id: claim.taskId,
    epoch: claim.epoch,
    phase: record.next_phase!,
    status: 'failed',
    dir: out.dir,
    error: { code: 'PLAN_REJECTED', message },
  });
}

/** Moves a record no agent can run to `failed/` with the reason (spec: bindings-workspace#task-record). */
export async function rejectClaim(ctx: RefusalContext, claim: Claim, problem: RecordProblem, record: TaskRecord | null): Promise<void> {
  let next: TaskRecord;
  if (record) {
    next = cloneRecord(record);
    next.state = {
      ...next.state,
      epoch: claim.epoch,
      status: 'failed',
      processed_by: ctx.agentId,
      last_error: { code: problem.code, message: problem.message.slice(0, 8192), at: isoNow() },
    };
  } else {
    next = rejectedRecord(claim.taskId, claim.epoch, claim.bytes, problem, ctx.agentId);
  }
  const out = await commitTransition(ctx.ws, claim, prepare(next), ctx.agentId);
  if (out.ok && claim.from === 'awaiting') {
    const plan = await readPlan(ctx.ws, claim.taskId);
    if (plan.state === 'ok') await forgetPlan(ctx.ws, claim.taskId, plan.value.plan_id);
  }
  if (out.ok) {
    ctx.log('warn', `refused task file ${claim.taskId}: ${problem.code}: ${problem.message}`);
    ctx.emit({ type: 'rejected', task_id: claim.taskId, epoch: claim.epoch, code: problem.code, message: problem.message });
  }
}
