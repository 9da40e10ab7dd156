/**
 * Plans through awaiting/: a phase that needs approval parks its record there with its plan file,
 * is claimed again only after a decision on the current plan, then runs the approved steps, ends
 * failed on a rejection, or revises its plan; a decision on a stale plan is never acted on
 * (spec: bindings-workspace#approval-and-cancel, plans#decisions).
 */
import { join } from 'node:path';
import { validateAgainst } from '../../../reference/core/validate.ts';
import type { TaskRecord } from '../../../reference/workspace/index.ts';
import { PLAN, check, show, verdictOf } from '../../cases/kit.ts';
import type { CaseContext } from '../../context.ts';
import { describeIssues } from '../../schemas.ts';
import { fail } from '../../verdict.ts';
import { barrier, expectRecord, finishWithin, needPhases, stop, whereIs, wsCase } from '../kit.ts';
import { poll, readOrNull } from '../observe.ts';
import { PHASES, publishRecord, record, writeFileAtomic } from '../records.ts';
import type { WorkspaceRun } from '../workspace-run.ts';

const SPEC = 'bindings-workspace#approval-and-cancel';

/** A plan as the agent wrote it. */
interface WrittenPlan {
  plan_id: string;
  revision_of?: unknown;
  feedback?: unknown;
  [member: string]: unknown;
}

function planPath(run: WorkspaceRun, id: string): string {
  return join(run.ws.paths.dir('awaiting'), `${id}.plan.json`);
}

/** Reads and checks awaiting/<id>.plan.json; FAIL when it is missing, not JSON or not a plan. */
async function readPlanFile(run: WorkspaceRun, id: string): Promise<WrittenPlan> {
  const bytes = await readOrNull(planPath(run, id));
  if (!bytes)
    stop(
      fail(
        `the record of ${id} is in awaiting/ but tasks/awaiting/${id}.plan.json does not exist`,
        'the plan file, written before the transition',
        'no plan file',
      ),
    );
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    stop(
      fail(
        `tasks/awaiting/${id}.plan.json is not JSON (${(err as Error).message})`,
        'a plan (plan.schema.json)',
        bytes.toString('utf8').slice(0, 200),
      ),
    );
  }
  const issues = validateAgainst('plan.schema.json', value);
  if (issues)
    stop(
      fail(
        `tasks/awaiting/${id}.plan.json does not match plan.schema.json: ${describeIssues(issues)}`,
        'a plan (plan.schema.json)',
        show(value),
      ),
    );
  return value as WrittenPlan;
}

/** Publishes a tap.test.plan task and waits for its record in awaiting/ and its plan. */
async function parked(ctx: CaseContext, run: WorkspaceRun, tag: string): Promise<{ id: string; waiting: TaskRecord; plan: WrittenPlan }> {
  needPhases(run, PHASES.plan);
  const id = run.taskId(tag);
  await publishRecord(run.ws, 'pending', record(id, PHASES.plan, { plan: PLAN }));
  const { record: waiting } = await expectRecord(ctx, run, 'awaiting', id, finishWithin(run), `a ${PHASES.plan} task`);
  const plan = await readPlanFile(run, id);
  ctx.note(`plan ${plan.plan_id} in tasks/awaiting/${id}.plan.json`);
  return { id, waiting, plan };
}

/** Writes the requester's decision file, as a requester does: a temp file, fsync, rename. */
async function decide(run: WorkspaceRun, id: string, decision: { plan_id: string; decision: string; feedback?: string }): Promise<void> {
  await writeFileAtomic(join(run.ws.paths.dir('awaiting'), `${id}.decision.json`), JSON.stringify(decision) + '\n');
}

/** The claims seen of `id` beyond the epoch given. */
function claimsAfter(run: WorkspaceRun, id: string, epoch: number): string[] {
  return run.observer.claims(id).filter((n) => Number(/@([0-9]+)\./.exec(n)?.[1]) > epoch);
}

/** Waits two leases and the barrier, then checks the record in awaiting/ is untouched and unclaimed since `waiting`. */
async function leftAlone(ctx: CaseContext, run: WorkspaceRun, id: string, waiting: TaskRecord, why: string) {
  const before = await readOrNull(run.ws.paths.record('awaiting', id));
  await ctx.sleep(run.leaseMs * 2);
  await barrier(ctx, run);
  const after = await readOrNull(run.ws.paths.record('awaiting', id));
  const later = claimsAfter(run, id, waiting.state.epoch);
  return [
    check(later.length === 0, `the agent claimed a record in awaiting/ ${why}`, 'no claim', later.join(', ')),
    check(
      before !== null && after !== null && before.equals(after),
      `the record in awaiting/ was changed or moved ${why}`,
      'the record untouched',
      await whereIs(run, id),
    ),
  ];
}

export const planCases = [
  wsCase({
    id: 'workspace.plan.awaiting',
    title:
      'A phase that needs approval parks its record in awaiting/ with status awaiting_approval and its plan file, and it is not claimed before a decision',
    spec: SPEC,
    requirements: ['TAP-WKS-022', 'TAP-WKS-007'],
    async run(ctx, run) {
      const { id, waiting, plan } = await parked(ctx, run, 'plan-wait');
      const checks = await leftAlone(ctx, run, id, waiting, 'while no decision exists');
      return verdictOf(
        `parked in awaiting/ with plan ${plan.plan_id}, left alone without a decision`,
        check(
          waiting.next_phase === PHASES.plan,
          `the record in awaiting/ has next_phase ${show(waiting.next_phase)}: the phase waiting for approval is still to run`,
          PHASES.plan,
          show(waiting.next_phase),
        ),
        ...checks,
      );
    },
  }),

  wsCase({
    id: 'workspace.plan.approved',
    title:
      "After an approval of the current plan the agent claims the record from awaiting/ and completes the phase, running the plan's steps",
    spec: SPEC,
    requirements: ['TAP-WKS-022', 'TAP-WKS-009', 'TAP-PLAN-008'],
    async run(ctx, run) {
      const { id, waiting, plan } = await parked(ctx, run, 'plan-approve');
      await decide(run, id, { plan_id: plan.plan_id, decision: 'approved', feedback: 'Go ahead.' });
      const { record: done } = await expectRecord(ctx, run, 'completed', id, finishWithin(run), 'an approved plan');
      const epoch = waiting.state.epoch + 1;
      const last = done.context.history[done.context.history.length - 1];
      const executed = (last?.output as { executed?: Array<{ step?: unknown; action?: unknown }> } | undefined)?.executed;
      const actions = Array.isArray(executed) ? executed.map((e) => e.action) : null;
      const want = PLAN.steps.map((s) => s.action);
      return verdictOf(
        `claimed as ${id}@${epoch} after the approval, steps ${show(actions)} run`,
        check(
          run.observer.claims(id).includes(`${id}@${epoch}.tap.json`),
          `the record in awaiting/ (epoch ${waiting.state.epoch}) was not claimed as ${id}@${epoch}.tap.json`,
          `${id}@${epoch}.tap.json`,
          run.observer.claims(id).join(', '),
        ),
        check(
          done.state.epoch === epoch,
          `the completed record has state.epoch ${done.state.epoch}`,
          String(epoch),
          String(done.state.epoch),
        ),
        check(last?.phase === PHASES.plan, `the last history entry is for phase ${show(last?.phase)}`, PHASES.plan, show(last?.phase)),
        check(
          JSON.stringify(actions) === JSON.stringify(want),
          'the phase did not run the approved steps, one output each, in order',
          show(want),
          show(last?.output),
        ),
      );
    },
  }),

  wsCase({
    id: 'workspace.plan.rejected',
    title: 'A rejection of the current plan ends the task in failed/ with PLAN_REJECTED, without running the phase',
    spec: SPEC,
    requirements: ['TAP-WKS-022', 'TAP-PLAN-009'],
    async run(ctx, run) {
      const { id, waiting, plan } = await parked(ctx, run, 'plan-reject');
      await decide(run, id, { plan_id: plan.plan_id, decision: 'rejected', feedback: 'Not this week.' });
      const { record: failed } = await expectRecord(ctx, run, 'failed', id, finishWithin(run), 'a rejected plan');
      const code = failed.state.last_error?.code;
      return verdictOf(
        `failed with ${code}`,
        check(failed.state.status === 'failed', `the task ended ${show(failed.state.status)}`, 'failed', show(failed.state.status)),
        check(code === 'PLAN_REJECTED', `the task ended with last_error ${show(failed.state.last_error)}`, 'PLAN_REJECTED', show(code)),
        check(
          failed.context.history.length === waiting.context.history.length,
          'the history gained an entry: the rejected phase ran',
          `${waiting.context.history.length} entries`,
          show(failed.context.history),
        ),
      );
    },
  }),

  wsCase({
    id: 'workspace.plan.revision',
    title:
      'After needs_revision the agent parks a revised plan with a new plan_id, revision_of naming the plan revised, the feedback it addresses, and a change',
    spec: SPEC,
    requirements: ['TAP-WKS-022', 'TAP-PLAN-010', 'TAP-PLAN-003'],
    async run(ctx, run) {
      const { id, waiting, plan } = await parked(ctx, run, 'plan-revise');
      const feedback = 'Name the wiki page in the intent.';
      await decide(run, id, { plan_id: plan.plan_id, decision: 'needs_revision', feedback });
      const revised = await poll(async () => {
        const rec = await readOrNull(run.ws.paths.record('awaiting', id));
        const bytes = await readOrNull(planPath(run, id));
        if (!rec || !bytes) return null;
        const epoch = (JSON.parse(rec.toString('utf8')) as TaskRecord).state.epoch;
        const p = JSON.parse(bytes.toString('utf8')) as WrittenPlan;
        return epoch > waiting.state.epoch && p.plan_id !== plan.plan_id ? p : null;
      }, finishWithin(run));
      if (!revised)
        stop(
          fail(
            `no revised plan in tasks/awaiting/ within ${Math.round(finishWithin(run))} ms of needs_revision`,
            'a new plan in awaiting/',
            await whereIs(run, id),
          ),
        );
      const checked = await readPlanFile(run, id);
      await expectRecord(ctx, run, 'awaiting', id, finishWithin(run), 'the revised plan');
      const members = ['intent', 'steps', 'rollback', 'estimated_cost', 'risk_level'];
      const changed = members.filter((m) => JSON.stringify(checked[m]) !== JSON.stringify(plan[m]));
      return verdictOf(
        `revised as ${checked.plan_id} (changed: ${changed.join(', ')})`,
        check(
          checked.revision_of === plan.plan_id,
          `the revised plan has revision_of ${show(checked.revision_of)}`,
          plan.plan_id,
          show(checked.revision_of),
        ),
        check(
          typeof checked.feedback === 'string' && checked.feedback !== '',
          'the revised plan states no feedback it addresses',
          'feedback',
          show(checked.feedback),
        ),
        check(
          changed.length > 0,
          'the revised plan changes none of intent, steps, rollback, estimated_cost and risk_level',
          'at least one changed',
          'none',
        ),
      );
    },
  }),

  wsCase({
    id: 'workspace.plan.stale-decision',
    title: "A decision naming a plan_id other than the current plan's is not acted on: the record stays in awaiting/, unclaimed",
    spec: SPEC,
    requirements: ['TAP-WKS-022'],
    async run(ctx, run) {
      const { id, waiting, plan } = await parked(ctx, run, 'plan-stale');
      const stale = `${plan.plan_id}-superseded`;
      await decide(run, id, { plan_id: stale, decision: 'approved' });
      const checks = await leftAlone(
        ctx,
        run,
        id,
        waiting,
        `after a decision on plan ${stale}, which is not its current plan ${plan.plan_id}`,
      );
      return verdictOf(`a decision on ${stale} was left alone`, ...checks);
    },
  }),
];
