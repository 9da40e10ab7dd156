/** tapctl workspace submit: publishes a task record (or a draft of one) in tasks/pending/. */
import { promises as fsp } from 'node:fs';
import { resolve } from 'node:path';
import { WorkspaceError, openWorkspace, submitTask, type TaskDraft } from '../../workspace/index.ts';
import type { Issue } from '../../core/validate.ts';
import { CliError, type Command } from '../registry.ts';
import { parseOptions, positionals } from '../cli.ts';
import { printJson } from './format.ts';

async function readInput(file: string): Promise<{ text: string; where: string }> {
  if (file === '-') {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return { text: Buffer.concat(chunks).toString('utf8'), where: 'standard input' };
  }
  const where = resolve(file);
  try {
    return { text: await fsp.readFile(where, 'utf8'), where };
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ENOENT')
      throw new CliError(`no such file: ${file}`, { where, hint: 'Give the path of a JSON file holding the task record or draft.' });
    if (code === 'EISDIR') throw new CliError(`${file} is a directory, not a task file`, { where });
    throw err;
  }
}

export const submitCommand: Command = {
  name: 'submit',
  summary: 'submit a task from a JSON file (a full record or a draft)',
  help: `Usage: tapctl workspace submit <dir> <file> [--json]

Publishes the task in <file> ("-" reads standard input) in tasks/pending/. The file holds a task
record (schemas/v1/task-record.schema.json) or a draft of one: members that are missing get
their defaults, so a draft can be as small as

  { "task_id": "demo-1", "next_phase": "analysis", "input": { "brief": "…" } }

("input" is short for context.current_input; without task_id a fresh id is chosen). A new task
must have attempts 0, epoch 0 and status "pending", and a task id no record has yet.

Options:
  --json   print the submitted record as JSON
`,
  async run(args, ctx) {
    const { values, positionals: given } = parseOptions(args, { json: { type: 'boolean' } });
    const [dir, file] = positionals(given, ['dir', 'file']);
    const ws = await openWorkspace(dir!);
    const { text, where } = await readInput(file!);
    let draft: unknown;
    try {
      draft = JSON.parse(text);
    } catch (err) {
      throw new CliError(`${file} is not valid JSON: ${(err as Error).message}`, { where, hint: 'Fix the JSON syntax and submit again.' });
    }
    if (typeof draft !== 'object' || draft === null || Array.isArray(draft)) {
      throw new CliError(`${file} must hold one JSON object (a task record or draft)`, { where });
    }
    let submitted;
    try {
      submitted = await submitTask(ws, draft as TaskDraft);
    } catch (err) {
      if (err instanceof WorkspaceError && err.code === 'INVALID_RECORD' && Array.isArray(err.details?.issues)) {
        const byPath = new Map<string, string[]>();
        for (const i of err.details.issues as Issue[]) {
          if (i.keyword === 'anyOf') continue;
          const at = i.path || '/';
          byPath.set(at, [...(byPath.get(at) ?? []), i.message]);
        }
        const rows = [...byPath].map(([at, messages]) => `    ${at}: ${messages.join(', or ')}`);
        const list = rows.slice(0, 10).join('\n') + (rows.length > 10 ? `\n    (and ${rows.length - 10} more)` : '');
        throw new CliError(`the task ${file === '-' ? 'on standard input' : `in ${file}`} is not a valid task record:\n${list}`, {
          where,
          hint: 'Fix the members listed above; schemas/v1/task-record.schema.json describes each.',
          code: 'INVALID_RECORD',
        });
      }
      throw err;
    }
    const { record, path } = submitted;
    if (values.json) {
      printJson(ctx.io, { task_id: record.task_id, path, record });
      return 0;
    }
    const target = record.requirements.target_agent ? `, for ${record.requirements.target_agent}` : '';
    ctx.io.out(`Submitted ${record.task_id} to tasks/pending/ (next phase ${record.next_phase}${target}).\n`);
    return 0;
  },
};
