/**
 * Plan approval through `awaiting/`: the plan file a claimant writes before its record parks in
 * `awaiting/`, the decision file the requester answers with, and whether a record there may be
 * claimed — only when a decision for its current plan exists
 * (spec: bindings-workspace#approval-and-cancel, plans#decisions).
 */
import type { Static } from '@sinclair/typebox';
import type { Plan as PlanSchema, PlanDecisionPayload } from '../../schemas/src/plan.ts';
import { validateAgainst } from '../core/validate.ts';
import type { Workspace } from './workspace.ts';
import { WorkspaceError } from './errors.ts';
import { fsyncDir, readBounded, unlinkIfExists, writeAtomic } from './fsio.ts';
import { locateTask } from './find.ts';
import { isIdentifier } from './layout.ts';
import { describeIssues } from './record.ts';

/** A plan as in plans#submission; a revision also carries `revision_of` and `feedback`, as `plan.submit` does. */
export type Plan = Static<typeof PlanSchema> & { revision_of?: string; feedback?: string };

/** A decision on a plan, as the payload of `plan.decision`. */
export type PlanDecision = Static<typeof PlanDecisionPayload>;

/** The largest plan or decision file the library reads. */
const MAX_FILE_BYTES = 1024 * 1024;

/** A plan or decision file: missing, valid, or refused with the reason. */
export type FileRead<T> = { state: 'missing' } | { state: 'ok'; value: T } | { state: 'invalid'; problem: string };

async function readJson(path: string): Promise<FileRead<unknown>> {
  const read = await readBounded(path, MAX_FILE_BYTES);
  if (!read) return { state: 'missing' };
  if (read.oversized) return { state: 'invalid', problem: `it is larger than ${MAX_FILE_BYTES} bytes` };
  try {
    return { state: 'ok', value: JSON.parse(Buffer.from(read.bytes).toString('utf8')) };
  } catch (err) {
    return { state: 'invalid', problem: `it is not JSON (${(err as Error).message})` };
  }
}

/** Why `value` is not a plan (plan.schema.json, and a revision's `revision_of` with its `feedback`), or null. */
export function planProblem(value: unknown): string | null {
  const issues = validateAgainst('plan.schema.json', value);
  if (issues) return `it does not match plan.schema.json: ${describeIssues(issues)}`;
  const p = value as Plan;
  if (p.revision_of !== undefined && !isIdentifier(p.revision_of))
    return `its revision_of ${JSON.stringify(p.revision_of)} is not a plan id`;
  if (p.revision_of !== undefined && typeof p.feedback !== 'string')
    return 'it revises a plan (revision_of) but states no feedback it addresses';
  if (p.feedback !== undefined && (typeof p.feedback !== 'string' || p.feedback.length > 8192))
    return 'its feedback is not a string of at most 8192 characters';
  return null;
}

/** Why `value` is not a decision (plan.decision.payload.schema.json), or null. */
export function decisionProblem(value: unknown): string | null {
  const issues = validateAgainst('plan.decision.payload.schema.json', value);
  return issues ? `it does not match plan.decision.payload.schema.json: ${describeIssues(issues)}` : null;
}

/** Reads `awaiting/<taskId>.plan.json`. */
export async function readPlan(ws: Workspace, taskId: string): Promise<FileRead<Plan>> {
  const r = await readJson(ws.paths.plan(taskId));
  if (r.state !== 'ok') return r;
  const problem = planProblem(r.value);
  return problem ? { state: 'invalid', problem } : { state: 'ok', value: r.value as Plan };
}

/** Reads `awaiting/<taskId>.decision.json`. */
export async function readDecision(ws: Workspace, taskId: string): Promise<FileRead<PlanDecision>> {
  const r = await readJson(ws.paths.decision(taskId));
  if (r.state !== 'ok') return r;
  const problem = decisionProblem(r.value);
  return problem ? { state: 'invalid', problem } : { state: 'ok', value: r.value as PlanDecision };
}

/**
 * Where the plan of a record in `awaiting/` stands. Only `decided` — a valid decision naming the
 * current plan — lets an agent claim the record (spec: bindings-workspace#approval-and-cancel).
 */
export interface Approval {
  state: 'no-plan' | 'bad-plan' | 'waiting' | 'bad-decision' | 'stale' | 'decided';
  plan: Plan | null;
  decision: PlanDecision | null;
  /** What is wrong, for every state but `waiting` and `decided`. */
  problem?: string;
}

/** Reads the plan and decision files of `taskId` and says where its approval stands. */
export async function approvalOf(ws: Workspace, taskId: string): Promise<Approval> {
  const plan = await readPlan(ws, taskId);
  if (plan.state === 'missing')
    return { state: 'no-plan', plan: null, decision: null, problem: `tasks/awaiting/${taskId}.plan.json is missing` };
  if (plan.state === 'invalid')
    return { state: 'bad-plan', plan: null, decision: null, problem: `tasks/awaiting/${taskId}.plan.json is refused: ${plan.problem}` };
  const decision = await readDecision(ws, taskId);
  if (decision.state === 'missing') return { state: 'waiting', plan: plan.value, decision: null };
  if (decision.state === 'invalid') {
    return {
      state: 'bad-decision',
      plan: plan.value,
      decision: null,
      problem: `tasks/awaiting/${taskId}.decision.json is refused: ${decision.problem}`,
    };
  }
  if (decision.value.plan_id !== plan.value.plan_id) {
    return {
      state: 'stale',
      plan: plan.value,
      decision: decision.value,
      problem: `tasks/awaiting/${taskId}.decision.json decides plan "${decision.value.plan_id}", not the current plan "${plan.value.plan_id}"; it is ignored`,
    };
  }
  return { state: 'decided', plan: plan.value, decision: decision.value };
}

/** What `decidePlan` wrote. */
export interface Decided {
  path: string;
  plan: Plan;
  decision: PlanDecision;
  /** True when it replaced an earlier decision file that no agent had acted on yet. */
  replaced: boolean;
}

/**
 * The requester's answer: writes `awaiting/<taskId>.decision.json` atomically. Refuses a decision
 * that is not a valid `plan.decision` payload (INVALID_DECISION), a task that is not waiting in
 * `awaiting/` (UNKNOWN_TASK, CONFLICT), and a `plan_id` that is not the current plan's
 * (STALE_PLAN) (spec: bindings-workspace#approval-and-cancel, plans#decisions).
 */
export async function decidePlan(ws: Workspace, taskId: string, decision: PlanDecision): Promise<Decided> {
  const problem = decisionProblem(decision);
  if (problem)
    throw new WorkspaceError(
      'INVALID_DECISION',
      `the decision is invalid: ${problem}`,
      undefined,
      'Give plan_id, decision (approved, rejected or needs_revision) and optional feedback.',
    );
  if (decision.decision === 'needs_revision' && !decision.feedback) {
    throw new WorkspaceError(
      'INVALID_DECISION',
      'a needs_revision decision needs feedback: the agent revises its plan to address it',
      undefined,
      'Say what the plan should change.',
    );
  }
  const loc = await locateTask(ws, taskId);
  if (!loc) throw new WorkspaceError('UNKNOWN_TASK', `no task ${taskId} in ${ws.root}`);
  if (loc.dir !== 'awaiting') {
    throw new WorkspaceError('CONFLICT', `task ${taskId} is not waiting for a plan decision: it is in tasks/${loc.dir}/`, loc.path);
  }
  const plan = await readPlan(ws, taskId);
  if (plan.state !== 'ok') {
    const why = plan.state === 'missing' ? 'there is no plan file' : `its plan file is refused: ${plan.problem}`;
    throw new WorkspaceError('CONFLICT', `task ${taskId} has no plan to decide: ${why}`, ws.paths.plan(taskId));
  }
  if (plan.value.plan_id !== decision.plan_id) {
    throw new WorkspaceError(
      'STALE_PLAN',
      `plan "${decision.plan_id}" is not the current plan of ${taskId}; the current plan is "${plan.value.plan_id}"`,
      ws.paths.plan(taskId),
      'Decide the current plan.',
      {
        current_plan_id: plan.value.plan_id,
      },
    );
  }
  const path = ws.paths.decision(taskId);
  const replaced = (await readBounded(path, MAX_FILE_BYTES)) !== null;
  const body: PlanDecision = {
    plan_id: decision.plan_id,
    decision: decision.decision,
    ...(decision.feedback !== undefined ? { feedback: decision.feedback } : {}),
  };
  await writeAtomic(path, JSON.stringify(body, null, 2) + '\n');
  return { path, plan: plan.value, decision: body, replaced };
}

/**
 * Why `next` may not be submitted after `current` (the plan the claim was decided on, if any):
 * a plan_id used before (plans#submission), or, after needs_revision, a revision that does not name
 * the plan it revises, states no feedback, or changes nothing (plans#decisions); null when it may.
 */
export function submissionProblem(
  next: Plan,
  current: { plan: Plan; decision: PlanDecision } | null,
  usedIds: ReadonlySet<string>,
): string | null {
  const shape = planProblem(next);
  if (shape) return `the plan is invalid: ${shape}`;
  if (usedIds.has(next.plan_id) || next.plan_id === current?.plan.plan_id)
    return `plan_id "${next.plan_id}" was already used by an earlier plan of this task`;
  if (current?.decision.decision !== 'needs_revision') return null;
  if (next.revision_of !== current.plan.plan_id)
    return `a revision after needs_revision must name the plan it revises: revision_of "${current.plan.plan_id}"`;
  if (typeof next.feedback !== 'string' || next.feedback === '') return 'a revision must state the feedback it addresses';
  const fields = ['intent', 'steps', 'rollback', 'estimated_cost', 'risk_level'] as const;
  if (fields.every((f) => JSON.stringify(next[f]) === JSON.stringify(current.plan[f])))
    return 'a revision must change at least one of intent, steps, rollback, estimated_cost and risk_level';
  return null;
}

/**
 * Removes the plan file and the decision file of `taskId` that name `planId`, once the task has
 * left `awaiting/` for that plan (or a new plan replaced it); files naming another plan — a
 * later plan of the task — are left alone.
 */
export async function forgetPlan(ws: Workspace, taskId: string, planId: string): Promise<void> {
  for (const path of [ws.paths.decision(taskId), ws.paths.plan(taskId)]) {
    const r = await readJson(path);
    const named = r.state === 'ok' ? (r.value as { plan_id?: unknown } | null)?.plan_id : undefined;
    if (named === planId || (r.state === 'invalid' && path === ws.paths.decision(taskId))) await unlinkIfExists(path);
  }
  await fsyncDir(ws.paths.dir('awaiting'));
}
