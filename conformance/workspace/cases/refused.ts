/**
 * Files no agent may run: malformed, schema-invalid, misnamed or foreign-version task records
 * and artifact references that leave artifacts/ end in failed/ with a clear last_error, the agent
 * keeps working, and files whose names the binding does not define are left alone
 * (spec: bindings-workspace#task-record, #artifacts, #writing-files).
 */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { check, show, verdictOf } from '../../cases/kit.ts';
import type { CaseContext } from '../../context.ts';
import type { Outcome } from '../../verdict.ts';
import { fail } from '../../verdict.ts';
import { renderRecord, type TaskRecord } from '../../../reference/workspace/index.ts';
import { barrier, expectRecord, finishWithin, needAlive, needPhases, stop, whereIs, wsCase } from '../kit.ts';
import { inodeOf, poll, readOrNull, readRecordFile } from '../observe.ts';
import { PHASES, entry, publishFile, publishRecord, record } from '../records.ts';
import type { WorkspaceRun } from '../workspace-run.ts';

/**
 * Waits for the task to land in failed/ with status failed and one of `codes` in last_error
 * (with a message), checks it never completed, and (unless `settle` is false) that the agent
 * still runs and still works.
 */
export async function refusal(
  ctx: CaseContext,
  run: WorkspaceRun,
  id: string,
  codes: string[],
  what: string,
  o: { settle?: boolean } = {},
): Promise<Outcome> {
  // A record that was run instead of refused shows up in completed/: no need to wait for failed/ then.
  const landed = await poll(async () => {
    for (const dir of ['failed', 'completed'] as const) if (await readRecordFile(run.ws.paths.record(dir, id), id)) return dir;
    return null;
  }, finishWithin(run));
  const completed = landed === 'completed' ? await readRecordFile(run.ws.paths.record('completed', id), id) : null;
  if (completed) stop(fail(`a record with ${what} was run and completed instead of refused`, 'the record in failed/', 'in completed/'));
  const got = await expectRecord(ctx, run, 'failed', id, finishWithin(run), `a record with ${what}`);
  const e = got.record.state.last_error;
  needAlive(run, `after it met a record with ${what}`);
  if (o.settle !== false) {
    await barrier(ctx, run);
    needAlive(run, `after it met a record with ${what}`);
  }
  return verdictOf(
    `refused into failed/ with ${e?.code}: ${e?.message?.slice(0, 120)}`,
    check(
      got.record.state.status === 'failed',
      `the refused record has status ${show(got.record.state.status)}`,
      'failed',
      show(got.record.state.status),
    ),
    check(
      e !== null && codes.includes(e.code),
      `the refused record's last_error is ${show(e)}`,
      `last_error.code ${codes.join(' or ')}`,
      show(e),
    ),
    check(
      typeof e?.message === 'string' && e.message.trim().length > 0,
      "the refused record's last_error has no message saying why",
      'a message',
      show(e?.message),
    ),
    check(
      got.record.context.history.every((h) => h.agent !== run.agentId),
      'the agent ran a phase of a record it should have refused',
      'no history entry by the agent',
      show(got.record.context.history),
    ),
  );
}

/** A record with one earlier history entry that lists `artifacts`. */
function withArtifacts(id: string, artifacts: string[]): TaskRecord {
  return record(
    id,
    PHASES.echo,
    { check: 'artifacts' },
    {
      current_phase: 'produce',
      context: {
        history: [entry('tap-conform.producer', 'produce', null, { made: artifacts.length }, artifacts)],
        current_input: { check: 'artifacts' },
      },
    },
  );
}

export const refusedCases = [
  wsCase({
    id: 'workspace.refuse.malformed-json',
    title: 'A task file that is not JSON ends in failed/ with MALFORMED_MESSAGE, and the agent keeps working',
    spec: 'bindings-workspace#task-record',
    requirements: ['TAP-WKS-005'],
    async run(ctx, run) {
      const id = run.taskId('malformed');
      await publishFile(
        run.ws,
        'pending',
        `${id}.tap.json`,
        `{"protocol": "tap/1.0", "task_id": "${id}", "next_phase": "${PHASES.echo}", `,
      );
      return refusal(ctx, run, id, ['MALFORMED_MESSAGE', 'INVALID_MESSAGE'], 'malformed JSON');
    },
  }),

  wsCase({
    id: 'workspace.refuse.schema-invalid',
    title: 'A task record that does not match task-record.schema.json ends in failed/ with INVALID_MESSAGE',
    spec: 'bindings-workspace#task-record',
    requirements: ['TAP-WKS-005'],
    async run(ctx, run) {
      const id = run.taskId('invalid');
      const rec = record(id, PHASES.echo, { x: 1 }) as unknown as Record<string, unknown>;
      delete rec.context;
      (rec.state as Record<string, unknown>).attempts = -1;
      await publishFile(run.ws, 'pending', `${id}.tap.json`, JSON.stringify(rec, null, 2));
      return refusal(ctx, run, id, ['INVALID_MESSAGE'], 'no context and a negative attempts');
    },
  }),

  wsCase({
    id: 'workspace.refuse.task-id-mismatch',
    title: 'A task record whose task_id differs from its file name ends in failed/ with INVALID_MESSAGE',
    spec: 'bindings-workspace#task-record',
    requirements: ['TAP-WKS-005'],
    async run(ctx, run) {
      const id = run.taskId('misnamed');
      const other = run.taskId('forged-id');
      await publishFile(run.ws, 'pending', `${id}.tap.json`, renderRecord(record(other, PHASES.echo, { x: 1 })));
      const o = await refusal(ctx, run, id, ['INVALID_MESSAGE'], `task_id "${other}" in the file ${id}.tap.json`);
      const leaked = (await whereIs(run, other)) !== 'nowhere in tasks/';
      return leaked
        ? fail(`the record was published under the task id it claims, ${other}`, 'nothing under the forged id', await whereIs(run, other))
        : o;
    },
  }),

  wsCase({
    id: 'workspace.refuse.protocol-version',
    title: 'A task record of protocol tap/2.0 ends in failed/ with UNSUPPORTED_VERSION',
    spec: 'bindings-workspace#configuration',
    requirements: ['TAP-WKS-002'],
    async run(ctx, run) {
      const id = run.taskId('tap2');
      await publishRecord(run.ws, 'pending', record(id, PHASES.echo, { x: 1 }, { protocol: 'tap/2.0' }));
      return refusal(ctx, run, id, ['UNSUPPORTED_VERSION', 'INVALID_MESSAGE'], 'protocol tap/2.0');
    },
  }),

  wsCase({
    id: 'workspace.artifacts.bad-syntax',
    title:
      'Artifact paths that are absolute or contain "..", a backslash, NUL or a line break end the task in failed/ with INVALID_MESSAGE',
    spec: 'bindings-workspace#artifacts',
    requirements: ['TAP-WKS-026'],
    budgetMs: 40_000,
    async run(ctx, run) {
      const paths = [
        '../tap-workspace.json',
        '/etc/hostname',
        'notes\\..\\..\\tap-workspace.json',
        'nul\u0000.txt',
        // A line break that a pattern's "." stops at must not hide the ".." after it.
        'a\n/../../tap-workspace.json',
        'line\u2028separator.txt',
      ];
      const ids: string[] = [];
      for (const p of paths) {
        const id = run.taskId('artifact-syntax');
        ids.push(id);
        await publishRecord(run.ws, 'pending', withArtifacts(id, [p]));
      }
      const outcomes: Outcome[] = [];
      for (const [i, id] of ids.entries())
        outcomes.push(
          await refusal(ctx, run, id, ['INVALID_MESSAGE'], `the artifact path ${JSON.stringify(paths[i])}`, {
            settle: i === ids.length - 1,
          }),
        );
      return verdictOf(`all ${paths.length} refused with INVALID_MESSAGE`, ...outcomes.map((o) => (o.verdict === 'PASS' ? null : o)));
    },
  }),

  wsCase({
    id: 'workspace.artifacts.escape',
    title:
      'Artifacts that lead out of artifacts/ (symbolic links, a hard link) end the task in failed/ with PERMISSION_DENIED; a plain one is read',
    spec: 'bindings-workspace#artifacts',
    requirements: ['TAP-WKS-026'],
    budgetMs: 40_000,
    async run(ctx, run) {
      needPhases(run, PHASES.echo);
      const tag = run.taskId('escape');
      const outside = join(run.root, `outside-${tag}`);
      const art = run.ws.paths.artifacts;
      await fsp.mkdir(outside, { recursive: true });
      await fsp.writeFile(join(outside, 'secret.txt'), 'outside artifacts/\n');
      await fsp.mkdir(join(art, tag), { recursive: true });
      await fsp.writeFile(join(art, tag, 'plain.txt'), 'inside artifacts/\n');
      await fsp.symlink(join(outside, 'secret.txt'), join(art, tag, 'link.txt'));
      await fsp.symlink(outside, join(art, `${tag}-dir`));
      await fsp.link(join(outside, 'secret.txt'), join(art, tag, 'hard.txt'));
      const cases = [
        { path: `${tag}/link.txt`, what: 'a symbolic link to a file outside artifacts/' },
        { path: `${tag}-dir/secret.txt`, what: 'a path through a symbolic link to a directory outside artifacts/' },
        { path: `${tag}/hard.txt`, what: 'a second hard link of a file outside artifacts/' },
      ];
      const ids = cases.map(() => run.taskId('artifact-escape'));
      const plain = run.taskId('artifact-plain');
      for (const [i, c] of cases.entries()) await publishRecord(run.ws, 'pending', withArtifacts(ids[i]!, [c.path]));
      await publishRecord(run.ws, 'pending', withArtifacts(plain, [`${tag}/plain.txt`]));
      const control = await expectRecord(
        ctx,
        run,
        'completed',
        plain,
        finishWithin(run),
        'the record whose artifact is a plain file inside artifacts/',
      );
      const outcomes: Outcome[] = [];
      for (const [i, c] of cases.entries())
        outcomes.push(await refusal(ctx, run, ids[i]!, ['PERMISSION_DENIED'], c.what, { settle: i === cases.length - 1 }));
      const untouched = (await readOrNull(join(outside, 'secret.txt')))?.toString('utf8') === 'outside artifacts/\n';
      return verdictOf(
        `the three escapes were refused with PERMISSION_DENIED; the plain artifact's task completed (${control.record.state.status})`,
        ...outcomes.map((o) => (o.verdict === 'PASS' ? null : o)),
        check(untouched, 'the file outside artifacts/ was changed', 'unchanged', 'changed or removed'),
      );
    },
  }),

  wsCase({
    id: 'workspace.files.ignored',
    title: 'Temp files (.tmp-*) and files whose names the binding does not define are never taken for task records',
    spec: 'bindings-workspace#writing-files',
    requirements: ['TAP-WKS-004'],
    async run(ctx, run) {
      needPhases(run, PHASES.echo);
      const inTmp = run.taskId('in-temp-file');
      const partial = run.taskId('partial');
      const upper = `Upper-${run.taskId('case')}`;
      const files: { name: string; bytes: string; mayVanish: boolean; ids: string[] }[] = [
        { name: `.tmp-${inTmp}`, bytes: renderRecord(record(inTmp, PHASES.echo, { temp: true })), mayVanish: true, ids: [inTmp] },
        {
          name: `${partial}.tap.json.part`,
          bytes: renderRecord(record(partial, PHASES.echo, { part: true })),
          mayVanish: false,
          ids: [partial],
        },
        { name: `${upper}.tap.json`, bytes: renderRecord(record(partial, PHASES.echo, { upper: true })), mayVanish: false, ids: [upper] },
        { name: `notes-${partial}.txt`, bytes: 'not a task\n', mayVanish: false, ids: [`notes-${partial}`] },
      ];
      for (const f of files) await publishFile(run.ws, 'pending', f.name, f.bytes);
      const inodes = await Promise.all(files.map((f) => inodeOf(join(run.ws.paths.dir('pending'), f.name))));
      await barrier(ctx, run);
      const problems: (Outcome | null)[] = [];
      for (const [i, f] of files.entries()) {
        const path = join(run.ws.paths.dir('pending'), f.name);
        const now = await readOrNull(path);
        const taken = f.ids.flatMap((id) => [
          ...run.observer.names('processing', `${id}@`),
          ...run.observer.names('completed', `${id}.`),
          ...run.observer.names('failed', `${id}.`),
        ]);
        problems.push(
          check(
            taken.length === 0,
            `pending/${f.name} was taken for a task record: ${taken.join(', ')}`,
            'the file ignored',
            taken.join(', '),
          ),
        );
        if (now === null) problems.push(check(f.mayVanish, `pending/${f.name} was removed`, 'the file left alone', 'removed'));
        else
          problems.push(
            check(
              now.toString('utf8') === f.bytes && inodes[i] === (await inodeOf(path)),
              `pending/${f.name} was changed`,
              'the file left alone',
              'changed',
            ),
          );
      }
      return verdictOf(`${files.length} files ignored`, ...problems);
    },
  }),
];
