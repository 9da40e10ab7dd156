/**
 * Submitting a task: a schema-valid record with `attempts` and `epoch` 0, published as a new name
 * in `pending/` for a task id that has no record anywhere (spec: bindings-workspace#task-record).
 */
import type { Workspace } from './workspace.ts';
import { validateAgainst } from '../core/validate.ts';
import { ArtifactRefused, checkRecordArtifacts } from './artifacts.ts';
import { WorkspaceError } from './errors.ts';
import { errnoOf, publishNew } from './fsio.ts';
import { locateTask } from './find.ts';
import { describeIssues, recordFromDraft, type TaskDraft, type TaskRecord } from './record.ts';
import { renderRecord } from './transition.ts';

/** What `submitTask` published. */
export interface Submitted {
  record: TaskRecord;
  path: string;
}

/**
 * Completes `draft` (see `recordFromDraft`), checks it and publishes it in `pending/`. Throws a
 * WorkspaceError: INVALID_RECORD (with `details.issues`), TASK_EXISTS, or ARTIFACT_REFUSED.
 */
export async function submitTask(ws: Workspace, draft: TaskDraft, now = new Date()): Promise<Submitted> {
  const value = recordFromDraft(draft, now);
  const issues = validateAgainst('task-record.schema.json', value);
  if (issues) {
    throw new WorkspaceError(
      'INVALID_RECORD',
      `the task record is invalid: ${describeIssues(issues)}`,
      undefined,
      'Fix the members named above; see schemas/v1/task-record.schema.json.',
      {
        issues,
      },
    );
  }
  const record = value as unknown as TaskRecord;
  const wrong: string[] = [];
  if (record.state.attempts !== 0) wrong.push('state.attempts must be 0');
  if (record.state.epoch !== 0) wrong.push('state.epoch must be 0');
  if (record.state.status !== 'pending') wrong.push('state.status must be "pending"');
  if (record.next_phase === null) wrong.push('next_phase must name the first phase to run');
  if (wrong.length > 0) {
    throw new WorkspaceError(
      'INVALID_RECORD',
      `a new task record is not ready to run: ${wrong.join('; ')}`,
      undefined,
      'Submit a new task, not one taken from another directory.',
    );
  }
  const problem = await checkRecordArtifacts(ws, record).catch((err: unknown) => {
    if (err instanceof ArtifactRefused) return { code: err.tapCode, message: err.message };
    throw err;
  });
  if (problem) throw new WorkspaceError('ARTIFACT_REFUSED', problem.message, ws.paths.artifacts);
  const existing = await locateTask(ws, record.task_id);
  if (existing) {
    throw new WorkspaceError(
      'TASK_EXISTS',
      `task ${record.task_id} already exists in tasks/${existing.dir}/`,
      existing.path,
      'Choose another task_id.',
    );
  }
  const path = ws.paths.record('pending', record.task_id);
  try {
    await publishNew(path, renderRecord(record));
  } catch (err) {
    if (errnoOf(err) === 'EEXIST') {
      throw new WorkspaceError('TASK_EXISTS', `task ${record.task_id} already exists in tasks/pending/`, path, 'Choose another task_id.');
    }
    throw err;
  }
  return { record, path };
}
