/** tapctl workspace show: a task's history as a readable script — who did what in which phase, with inputs, outputs and artifacts. */
import {
  approvalOf,
  fullHistory,
  locateTask,
  openWorkspace,
  readLease,
  readLocated,
  type Approval,
  type HistoryEntry,
  type Plan,
  type PlanDecision,
  type TaskRecord,
} from '../../workspace/index.ts';
import { CliError, type Command } from '../registry.ts';
import { parseOptions, positionals } from '../cli.ts';
import { excerpt, printJson } from './format.ts';

/** A plan as indented lines for people: intent, numbered steps, rollback, cost and risk. */
export function renderPlan(plan: Plan, indent: string): string[] {
  const lines = [`${indent}intent      ${excerpt(plan.intent, 200)}`];
  plan.steps.forEach((st, i) => {
    lines.push(
      `${indent}step ${i + 1}      ${st.action}${st.target ? ` → ${st.target}` : ''}${st.expected_output ? ` (${excerpt(st.expected_output, 80)})` : ''}${st.reversible ? '' : ' [not reversible]'}`,
    );
  });
  if (plan.rollback) lines.push(`${indent}rollback    ${excerpt(plan.rollback, 200)}`);
  const cost = [
    plan.estimated_cost.tokens !== undefined ? `${plan.estimated_cost.tokens} tokens` : '',
    plan.estimated_cost.seconds !== undefined ? `${plan.estimated_cost.seconds} s` : '',
  ]
    .filter(Boolean)
    .join(', ');
  lines.push(`${indent}risk        ${plan.risk_level}${cost ? ` · estimated ${cost}` : ''}`);
  if (plan.revision_of) lines.push(`${indent}revises     ${plan.revision_of}, addressing: ${excerpt(plan.feedback ?? '', 160)}`);
  return lines;
}

function decisionText(d: PlanDecision): string {
  return `${d.decision}${d.feedback ? ` — ${excerpt(d.feedback, 160)}` : ''}`;
}

/** Renders a record and its whole history as a script for people; `approval` is where the plan of a record in awaiting/ stands. */
export function renderScript(
  record: TaskRecord,
  history: HistoryEntry[],
  where: { dir: string; epoch?: number; holder?: string | null },
  full = false,
  approval?: Approval | null,
): string {
  const cut = (v: unknown) => (full ? JSON.stringify(v, null, 2).replace(/\n/g, '\n' + ' '.repeat(16)) : excerpt(v, 200));
  const s = record.state;
  const status = where.dir === 'processing' ? 'running' : (s.status ?? where.dir);
  const lines: string[] = [];
  lines.push(`Task ${record.task_id}: ${status}`);
  lines.push(
    `  created ${record.created_at} · epoch ${where.epoch ?? s.epoch} · attempts ${s.attempts}${s.processed_by ? ` · last held by ${s.processed_by}` : ''}`,
  );
  const pipeline = record.metadata.pipeline;
  if (Array.isArray(pipeline) && pipeline.every((p) => typeof p === 'string')) lines.push(`  pipeline: ${pipeline.join(' → ')}`);
  lines.push('');
  if (history.length === 0) lines.push('  No phase has finished yet.', '');
  history.forEach((h, i) => {
    lines.push(`${i + 1}. ${h.phase}, by ${h.agent} at ${h.timestamp}`);
    const prev = history[i - 1];
    const handedOn = prev !== undefined && JSON.stringify(prev.output) === JSON.stringify(h.input);
    lines.push(`     input       ${handedOn ? `the output of ${i}` : cut(h.input)}`);
    lines.push(`     output      ${cut(h.output)}`);
    if (h.artifacts.length > 0) lines.push(`     artifacts   ${h.artifacts.map((a) => `artifacts/${a}`).join(', ')}`);
    const planned = h as HistoryEntry & { plan?: Plan; decision?: PlanDecision };
    if (planned.plan?.plan_id)
      lines.push(`     plan        ${planned.plan.plan_id}${planned.decision ? `, ${decisionText(planned.decision)}` : ''}`);
    lines.push('');
  });
  const target = record.requirements.target_agent ? `agent ${record.requirements.target_agent}` : 'any agent serving it';
  const err = s.last_error ? `${s.last_error.code}: ${s.last_error.message}` : null;
  if (where.dir === 'processing') {
    lines.push(
      `Now: phase ${record.next_phase} is claimed (epoch ${where.epoch}) by ${where.holder ?? 'an agent that has not written its lease yet'}.`,
    );
  } else if (where.dir === 'pending') {
    lines.push(`Now: waiting in tasks/pending/ for phase ${record.next_phase} (${target}).`);
    if (s.attempts > 0) lines.push(`  ${s.attempts} earlier claim${s.attempts === 1 ? '' : 's'} of this phase did not finish it.`);
    if (err) lines.push(`  last error: ${err}`);
  } else if (where.dir === 'awaiting') {
    const plan = approval?.plan;
    lines.push(
      `Now: waiting in tasks/awaiting/ for a decision on ${plan ? `plan ${plan.plan_id}` : 'a plan'} before phase ${record.next_phase} runs (${target}).`,
    );
    if (plan) lines.push(...renderPlan(plan, '  '));
    const d = approval?.decision;
    if (approval?.state === 'waiting')
      lines.push(`  decision    none yet: tapctl workspace decide <dir> ${record.task_id} --approve|--reject|--revise <feedback>`);
    else if (approval?.state === 'decided' && d)
      lines.push(`  decision    ${decisionText(d)}; an agent serving ${record.next_phase} will act on it`);
    else if (approval?.problem)
      lines.push(`  ${approval.state === 'stale' && d ? `decision    ${decisionText(d)}, ignored: ` : 'problem     '}${approval.problem}`);
  } else if (where.dir === 'completed') {
    const last = history[history.length - 1];
    const same = last !== undefined && JSON.stringify(last.output) === JSON.stringify(record.context.current_input);
    lines.push(`Now: completed.${same ? '' : ` Final output: ${cut(record.context.current_input)}`}`);
  } else {
    lines.push(`Now: ${status} in tasks/${where.dir}/${record.next_phase ? ` during phase ${record.next_phase}` : ''}.`);
    if (err) lines.push(`  ${s.last_error?.code === 'MAX_ATTEMPTS' ? 'dead letter: ' : ''}${err}`);
    const rejected = record.metadata['x-rejected-record'] as { excerpt?: string } | undefined;
    if (rejected?.excerpt !== undefined) lines.push(`  the refused file began: ${excerpt(rejected.excerpt, 200)}`);
  }
  return lines.join('\n') + '\n';
}

export const showCommand: Command = {
  name: 'show',
  summary: "show a task's history as a readable script",
  help: `Usage: tapctl workspace show <dir> <task_id> [--full] [--json]

Prints the task's history — compacted entries included — as a script: each phase, the agent
that ran it and when, its input, output, artifacts and approved plan; then where the task is
now, with the plan it waits on and the decision so far when it is in tasks/awaiting/.

Options:
  --full   print inputs and outputs whole instead of one line each
  --json   print the record, its location and its whole history as JSON
`,
  async run(args, ctx) {
    const { values, positionals: given } = parseOptions(args, { json: { type: 'boolean' }, full: { type: 'boolean' } });
    const [dir, taskId] = positionals(given, ['dir', 'task_id']);
    const ws = await openWorkspace(dir!);
    const loc = await locateTask(ws, taskId!);
    if (!loc) {
      throw new CliError(`no task ${JSON.stringify(taskId)} in ${ws.root}`, {
        hint: `Run tapctl workspace status ${dir} to see the tasks.`,
        code: 'UNKNOWN_TASK',
      });
    }
    const check = await readLocated(loc, taskId!);
    if (!check) throw new CliError(`task ${taskId} moved while it was being read; try again`, { where: loc.path });
    if (!check.ok) {
      throw new CliError(`the record of ${taskId} cannot be read: ${check.code}: ${check.message}`, { where: loc.path, code: check.code });
    }
    const record = check.record;
    const { entries, compacted } = await fullHistory(ws, record);
    const holder = loc.kind === 'claim' ? ((await readLease(ws, taskId!, loc.epoch!))?.agent_id ?? null) : undefined;
    const approval = loc.dir === 'awaiting' ? await approvalOf(ws, taskId!) : null;
    if (values.json) {
      printJson(ctx.io, {
        task_id: record.task_id,
        location: { dir: loc.dir, kind: loc.kind, path: loc.path, ...(loc.epoch !== undefined ? { epoch: loc.epoch } : {}) },
        ...(holder !== undefined ? { holder } : {}),
        ...(approval ? { approval } : {}),
        record,
        history: entries,
        compacted,
      });
      return 0;
    }
    ctx.io.out(renderScript(record, entries, { dir: loc.dir, epoch: loc.epoch, holder }, values.full ?? false, approval));
    return 0;
  },
};
