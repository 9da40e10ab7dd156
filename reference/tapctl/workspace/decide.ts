/** tapctl workspace decide: the requester's answer to a plan waiting in tasks/awaiting/ (spec: bindings-workspace#approval-and-cancel). */
import { decidePlan, locateTask, openWorkspace, readPlan, type PlanDecision } from '../../workspace/index.ts';
import { CliError, type Command } from '../registry.ts';
import { parseOptions, positionals } from '../cli.ts';
import { printJson } from './format.ts';

const SAID: Record<PlanDecision['decision'], string> = {
  approved: 'Approved',
  rejected: 'Rejected',
  needs_revision: 'Asked for a revision of',
};

const NEXT: Record<PlanDecision['decision'], string> = {
  approved: 'an agent serving the phase will claim the task and run the plan',
  rejected: 'an agent serving the phase will end the task failed with PLAN_REJECTED',
  needs_revision: 'an agent serving the phase will submit a revised plan',
};

export const decideCommand: Command = {
  name: 'decide',
  summary: 'approve, reject or ask to revise the plan of a task waiting in awaiting/',
  help: `Usage: tapctl workspace decide <dir> <task_id> --approve|--reject|--revise <feedback> [options]

Writes tasks/awaiting/<task_id>.decision.json, the answer to the plan the task waits on
(tasks/awaiting/<task_id>.plan.json; tapctl workspace show prints it). An agent serving the
task's phase then claims it: to run the plan (--approve), to end the task failed with
PLAN_REJECTED (--reject), or to submit a revised plan that addresses the feedback (--revise).

Options:
  --approve          approve the plan
  --reject           reject it; the task ends failed
  --revise TEXT      ask for a revision, saying what to change
  --feedback TEXT    why (with --approve or --reject)
  --plan-id ID       the plan decided (default: the current plan); a plan that is no longer
                     current is refused, so a decision never lands on a plan you did not see
  --json             print the decision written as JSON
`,
  async run(args, ctx) {
    const { values, positionals: given } = parseOptions(args, {
      approve: { type: 'boolean' },
      reject: { type: 'boolean' },
      revise: { type: 'string' },
      feedback: { type: 'string' },
      'plan-id': { type: 'string' },
      json: { type: 'boolean' },
    });
    const [dir, taskId] = positionals(given, ['dir', 'task_id']);
    const chosen = [values.approve && 'approved', values.reject && 'rejected', values.revise !== undefined && 'needs_revision'].filter(
      (d): d is PlanDecision['decision'] => typeof d === 'string',
    );
    if (chosen.length !== 1)
      throw new CliError(
        chosen.length === 0
          ? 'give one decision: --approve, --reject or --revise <feedback>'
          : 'give only one of --approve, --reject and --revise',
        { usage: true },
      );
    const decision = chosen[0]!;
    if (decision === 'needs_revision' && values.feedback !== undefined)
      throw new CliError('--revise carries the feedback itself; leave out --feedback', { usage: true });
    if (decision === 'needs_revision' && values.revise!.trim() === '')
      throw new CliError('--revise needs feedback: say what the plan should change', { usage: true });
    const feedback = decision === 'needs_revision' ? values.revise : values.feedback;
    const ws = await openWorkspace(dir!);
    let planId = values['plan-id'];
    if (planId === undefined) {
      const plan = await readPlan(ws, taskId!);
      if (plan.state !== 'ok') {
        const loc = await locateTask(ws, taskId!);
        if (!loc)
          throw new CliError(`no task ${JSON.stringify(taskId)} in ${ws.root}`, {
            hint: `Run tapctl workspace status ${dir} to see the tasks.`,
            code: 'UNKNOWN_TASK',
          });
        if (loc.dir !== 'awaiting')
          throw new CliError(`task ${taskId} is not waiting for a plan decision: it is in tasks/${loc.dir}/`, {
            where: loc.path,
            code: 'CONFLICT',
          });
        const why = plan.state === 'missing' ? 'it has no plan file' : `its plan file is refused: ${plan.problem}`;
        throw new CliError(`task ${taskId} has no plan to decide: ${why}`, { where: ws.paths.plan(taskId!), code: 'CONFLICT' });
      }
      planId = plan.value.plan_id;
    }
    const done = await decidePlan(ws, taskId!, { plan_id: planId, decision, ...(feedback !== undefined ? { feedback } : {}) });
    if (values.json) {
      printJson(ctx.io, { task_id: taskId, ...done.decision, path: done.path, replaced: done.replaced });
      return 0;
    }
    const replaced = done.replaced ? ' (replacing the earlier decision)' : '';
    ctx.io.out(`${SAID[decision]} plan ${planId} of ${taskId}${replaced}; ${NEXT[decision]}.\n`);
    return 0;
  },
};
