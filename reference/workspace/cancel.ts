/**
 * Cancelling a task: a record in `pending/` or `awaiting/` is claimed and moved to `failed/` as
 * cancelled (an awaiting one's plan and decision files removed); a claimed one gets the cancel
 * sidecar its claimant checks before each step (spec: bindings-workspace#approval-and-cancel).
 */
import type { Workspace } from './workspace.ts';
import { forgetPlan, readPlan } from './approval.ts';
import { claimAwaiting, claimPending } from './claim.ts';
import { WorkspaceError } from './errors.ts';
import { writeAtomic } from './fsio.ts';
import { locateTask, readLocated } from './find.ts';
import { cloneRecord } from './record.ts';
import { commitTransition, prepare } from './transition.ts';

/** Cancels `taskId` as `actor`: 'cancelled' when it ended here, 'requested' when its claimant was asked to stop. */
export async function cancelTask(ws: Workspace, taskId: string, actor: string): Promise<'cancelled' | 'requested'> {
  for (let round = 0; round < 5; round++) {
    const loc = await locateTask(ws, taskId);
    if (!loc) throw new WorkspaceError('UNKNOWN_TASK', `no task ${taskId} in ${ws.root}`);
    if (loc.kind === 'claim') {
      await writeAtomic(ws.paths.sidecar(taskId, loc.epoch!, 'cancel'), JSON.stringify({ by: actor, at: new Date().toISOString() }) + '\n');
      return 'requested';
    }
    if (loc.dir === 'completed' || loc.dir === 'failed') {
      throw new WorkspaceError('CONFLICT', `task ${taskId} has already ended (tasks/${loc.dir}/)`, loc.path);
    }
    if (loc.kind === 'record' && (loc.dir === 'pending' || loc.dir === 'awaiting')) {
      const check = await readLocated(loc, taskId);
      if (!check) continue;
      const epoch = check.ok ? check.record.state.epoch : (check.epoch ?? 0);
      const plan = loc.dir === 'awaiting' ? await readPlan(ws, taskId) : null;
      const claim = loc.dir === 'pending' ? await claimPending(ws, taskId, epoch, actor) : await claimAwaiting(ws, taskId, epoch, actor);
      if (!claim) continue;
      if (!claim.check.ok) {
        await commitTransition(ws, claim, { dir: claim.from, bytes: claim.bytes }, actor);
        throw new WorkspaceError('INVALID_RECORD', `task ${taskId} is not a valid record: ${claim.check.message}`, loc.path);
      }
      const rec = cloneRecord(claim.check.record);
      rec.state = { ...rec.state, epoch: claim.epoch, status: 'cancelled', processed_by: actor, last_error: null };
      const out = await commitTransition(ws, claim, prepare(rec), actor);
      if (out.ok && plan?.state === 'ok') await forgetPlan(ws, taskId, plan.value.plan_id);
      if (out.ok) return 'cancelled';
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new WorkspaceError('CONFLICT', `task ${taskId} kept moving; try again`);
}
