/**
 * The task table's answer to a task.request it has no room for: BUSY, saying when room frees
 * (finished tasks are kept for the resume window), and a warning to the operator naming the
 * option to raise, at most once a minute (spec: limits#table-limits, resume#retention).
 */
import { errorPayload, type ErrorPayload } from '../core/index.ts';
import type { Runtime } from './runtime.ts';

/** How often the operator is warned that a table cap refuses tasks. */
const WARN_EVERY_MS = 60_000;
const warnedAt = new WeakMap<Runtime, number>();

/** Makes room for a task of `principal` in the task table; null, or the BUSY that says why there is none. */
export function keptTableProblem(rt: Runtime, principal: string): ErrorPayload | null {
  const full = rt.tasks.admit(principal);
  if (!full) return null;
  const windowS = Math.round(rt.settings.resumeWindowMs / 1000);
  const frees =
    full.freesInMs === undefined
      ? 'every task it holds is still running'
      : `a finished task is kept for the resume window (${windowS} s), and room frees in ${Math.ceil(full.freesInMs / 1000)} s`;
  const now = rt.now();
  if (now - (warnedAt.get(rt) ?? -Infinity) >= WARN_EVERY_MS) {
    warnedAt.set(rt, now);
    const option =
      full.scope === 'agent' ? 'maxTasksKept' : full.what === 'tasks kept' ? 'maxTasksKeptPerPrincipal' : 'maxRetainedBytesPerPrincipal';
    rt.log(
      'warn',
      `tasks refused BUSY: ${full.scope === 'agent' ? 'all requesters together' : `requester ${principal}`} reached ${option} (${full.limit} ${full.what}) within the resume window (${windowS} s); raise ${option} or shorten resumeWindowMs if that rate is expected (this warning repeats at most once a minute)`,
    );
  }
  return errorPayload('BUSY', `the ${full.scope} limit of ${full.limit} ${full.what} is reached: ${frees}`, {
    scope: full.scope,
    limit: full.limit,
  });
}
