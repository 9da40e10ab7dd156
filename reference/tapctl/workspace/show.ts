/** tapctl workspace show: a task's history as a readable script — who did what in which phase, with inputs, outputs and artifacts. */
import { fullHistory, locateTask, openWorkspace, readLease, readLocated, type HistoryEntry, type TaskRecord } from '../../workspace/index.ts';
import { CliError, type Command } from '../registry.ts';
import { parseOptions, positionals } from '../cli.ts';
import { excerpt, printJson } from './format.ts';

/** Renders a record and its whole history as a script for people. */
export function renderScript(record: TaskRecord, history: HistoryEntry[], where: { dir: string; epoch?: number; holder?: string | null }, full = false): string {
  const cut = (v: unknown) => (full ? JSON.stringify(v, null, 2).replace(/\n/g, '\n' + ' '.repeat(16)) : excerpt(v, 200));
  const s = record.state;
  const status = where.dir === 'processing' ? 'running' : (s.status ?? where.dir);
  const lines: string[] = [];
  lines.push(`Task ${record.task_id}: ${status}`);
  lines.push(`  created ${record.created_at} · epoch ${where.epoch ?? s.epoch} · attempts ${s.attempts}${s.processed_by ? ` · last held by ${s.processed_by}` : ''}`);
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
    lines.push('');
  });
  const target = record.requirements.target_agent ? `agent ${record.requirements.target_agent}` : 'any agent serving it';
  const err = s.last_error ? `${s.last_error.code}: ${s.last_error.message}` : null;
  if (where.dir === 'processing') {
    lines.push(`Now: phase ${record.next_phase} is claimed (epoch ${where.epoch}) by ${where.holder ?? 'an agent that has not written its lease yet'}.`);
  } else if (where.dir === 'pending') {
    lines.push(`Now: waiting in tasks/pending/ for phase ${record.next_phase} (${target}).`);
    if (s.attempts > 0) lines.push(`  ${s.attempts} earlier claim${s.attempts === 1 ? '' : 's'} of this phase did not finish it.`);
    if (err) lines.push(`  last error: ${err}`);
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
that ran it and when, its input, output and artifacts; then where the task is now.

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
      throw new CliError(`no task ${JSON.stringify(taskId)} in ${ws.root}`, { hint: `Run tapctl workspace status ${dir} to see the tasks.`, code: 'UNKNOWN_TASK' });
    }
    const check = await readLocated(loc, taskId!);
    if (!check) throw new CliError(`task ${taskId} moved while it was being read; try again`, { where: loc.path });
    if (!check.ok) {
      throw new CliError(`the record of ${taskId} cannot be read: ${check.code}: ${check.message}`, { where: loc.path, code: check.code });
    }
    const record = check.record;
    const { entries, compacted } = await fullHistory(ws, record);
    const holder = loc.kind === 'claim' ? ((await readLease(ws, taskId!, loc.epoch!))?.agent_id ?? null) : undefined;
    if (values.json) {
      printJson(ctx.io, {
        task_id: record.task_id,
        location: { dir: loc.dir, kind: loc.kind, path: loc.path, ...(loc.epoch !== undefined ? { epoch: loc.epoch } : {}) },
        ...(holder !== undefined ? { holder } : {}),
        record,
        history: entries,
        compacted,
      });
      return 0;
    }
    ctx.io.out(renderScript(record, entries, { dir: loc.dir, epoch: loc.epoch, holder }, values.full ?? false));
    return 0;
  },
};
