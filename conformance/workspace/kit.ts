/**
 * What the workspace cases share: the run they work in, how a case is declared (profile
 * "workspace"), and the checks they are made of — a record where it belongs, valid against its
 * schema and in the directory of its status, and a barrier that proves the agent has looked at
 * `pending/` since a file was placed there (spec: bindings-workspace).
 */
import type { Case, Needs, Profile } from '../case.ts';
import type { CaseContext } from '../context.ts';
import { Stop, attempt, show } from '../cases/kit.ts';
import { fail, notTested, type Level, type Outcome } from '../verdict.ts';
import { STATUS_DIR, type TaskRecord } from '../../reference/workspace/index.ts';
import { claimFiles, poll, readRecordFile, type ReadRecord } from './observe.ts';
import { PHASES, publishRecord, record } from './records.ts';
import type { WorkspaceRun } from './workspace-run.ts';

let current: WorkspaceRun | null = null;

/** Binds the run the workspace cases work in (null to unbind). */
export function bindRun(run: WorkspaceRun | null): void {
  current = run;
}

/** The run of the cases; a case that runs without one is a harness error. */
export function currentRun(): WorkspaceRun {
  if (!current) throw new Error('no workspace run is bound: workspace cases run only under tap-conform --workspace');
  return current;
}

/** A workspace case: a Case of the profile "workspace", which may need to run alone or last. */
export interface WorkspaceCase extends Case {
  /** Runs with no other case at once (it pauses or stops the agent). */
  exclusive?: boolean;
  /** Runs after every other case (it stops the agent). */
  last?: boolean;
}

/** The profile of the workspace binding (spec: conformance#profiles). */
export const WORKSPACE_PROFILE = 'workspace' as Profile;

/** Declares a workspace case; `body` may stop early with `need`/`require` (see cases/kit.ts). */
export function wsCase(c: {
  id: string;
  title: string;
  level?: Level;
  spec: string;
  requirements: string[];
  needs?: Needs;
  budgetMs?: number;
  exclusive?: boolean;
  last?: boolean;
  run: (ctx: CaseContext, run: WorkspaceRun) => Promise<Outcome>;
}): WorkspaceCase {
  const body = c.run;
  return {
    id: c.id,
    title: c.title,
    level: c.level ?? 'MUST',
    profile: WORKSPACE_PROFILE,
    spec: c.spec,
    requirements: c.requirements,
    needs: c.needs,
    budgetMs: c.budgetMs,
    exclusive: c.exclusive,
    last: c.last,
    run: attempt((ctx) => body(ctx, currentRun())),
  };
}

/** Stops the case with `o`. */
export function stop(o: Outcome): never {
  throw new Stop(o);
}

/** Stops the case NOT-TESTED unless the agent serves every phase named. */
export function needPhases(run: WorkspaceRun, ...phases: string[]): void {
  const missing = phases.filter((p) => !run.serves(p));
  if (missing.length > 0) {
    stop(
      notTested(
        `the agent does not serve the conformance phase${missing.length > 1 ? 's' : ''} ${missing.join(', ')} (its state.json lists ${show(run.startup.phases)})`,
      ),
    );
  }
}

/** Stops the case FAIL when the agent process has exited. */
export function needAlive(run: WorkspaceRun, after: string): void {
  if (run.agent.alive()) return;
  const exit = run.agent.exitStatus();
  const how = exit?.signal ? `was killed by ${exit.signal}` : `exited with code ${exit?.code}`;
  stop(
    fail(
      `the agent process ${how} ${after}`,
      'the agent keeps running',
      `it ${how}; its output ends: ${run.agent.lastLines(3).join(' | ') || 'nothing'}`,
    ),
  );
}

/** The directories a published record may lie in. */
export type RecordDir = 'pending' | 'awaiting' | 'completed' | 'failed';

/** Waits for `tasks/<dir>/<id>.tap.json`; FAIL (with where the task is instead) when it does not come within `ms`. */
export async function expectRecord(
  ctx: CaseContext,
  run: WorkspaceRun,
  dir: RecordDir,
  taskId: string,
  ms: number,
  what: string,
): Promise<ReadRecord & { record: TaskRecord; at: number }> {
  const path = run.ws.paths.record(dir, taskId);
  const found = await poll(() => readRecordFile(path, taskId), ms);
  const at = run.observer.now();
  if (!found) {
    const where = await whereIs(run, taskId);
    stop(
      fail(
        `${what}: no record in tasks/${dir}/ within ${Math.round(ms)} ms; the task is ${where}`,
        `tasks/${dir}/${taskId}.tap.json`,
        where,
      ),
    );
  }
  if (!found.record)
    stop(
      fail(
        `${what}: tasks/${dir}/${taskId}.tap.json is not a valid record (${found.problem})`,
        'a record valid against task-record.schema.json',
        found.problem,
      ),
    );
  const status = found.record.state.status ?? 'pending';
  if (STATUS_DIR[status] !== dir) {
    stop(
      fail(
        `${what}: the record in tasks/${dir}/ has state.status "${status}", which belongs in ${STATUS_DIR[status]}/`,
        `a record whose status belongs in ${dir}/`,
        `status ${status}`,
      ),
    );
  }
  ctx.note(`tasks/${dir}/${taskId}.tap.json: status ${status}, epoch ${found.record.state.epoch}, attempts ${found.record.state.attempts}`);
  return { ...found, record: found.record, at };
}

/** Where the files of a task are now, for people. */
export async function whereIs(run: WorkspaceRun, taskId: string): Promise<string> {
  const places: string[] = [];
  for (const dir of ['pending', 'awaiting', 'completed', 'failed'] as const) {
    if (await readRecordFile(run.ws.paths.record(dir, taskId), taskId)) places.push(`tasks/${dir}/`);
  }
  const inProcessing = await claimFiles(run.ws.paths.dir('processing'), taskId);
  if (inProcessing.length > 0) places.push(`tasks/processing/ (${inProcessing.join(', ')})`);
  return places.length > 0 ? `in ${places.join(' and ')}` : 'nowhere in tasks/';
}

/** How long a phase of the conformance phases may take to be claimed and finished: the allowance of an immediate event, a few times over. */
export function finishWithin(run: WorkspaceRun): number {
  return run.scaled(15_000);
}

/**
 * Proves the agent has looked at `pending/` since now: submits a tap.test.echo task, waits for it
 * to complete, then waits one more lease for scans that started before it. Without the echo
 * phase it only waits two leases.
 */
export async function barrier(ctx: CaseContext, run: WorkspaceRun): Promise<void> {
  if (run.serves(PHASES.echo)) {
    const id = run.taskId('barrier');
    await publishRecord(run.ws, 'pending', record(id, PHASES.echo, { barrier: true }));
    await expectRecord(ctx, run, 'completed', id, finishWithin(run), 'a control task submitted after it');
    await ctx.sleep(run.leaseMs);
  } else {
    await ctx.sleep(run.leaseMs * 2);
  }
}
