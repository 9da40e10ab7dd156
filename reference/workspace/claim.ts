/**
 * Claiming a record: one rename from `pending/` (or from `awaiting/`, after a decision) into
 * `processing/<task_id>@<epoch>.tap.json`, the epoch in the name being the record's `state.epoch`
 * plus one, the fencing token of the claim (spec: bindings-workspace#claiming).
 */
import type { Workspace } from './workspace.ts';
import { entryExists, fsyncDirs, isMissing, readBounded, renameNow, sha256Hex } from './fsio.ts';
import { takeLock } from './lock.ts';
import { MAX_RECORD_BYTES, checkRecordBytes, type RecordCheck } from './record.ts';
import { commitTransition, type ClaimRef } from './transition.ts';

/** A claim this actor holds: the claimed file's path and bytes, and what checking them found. */
export interface Claim extends ClaimRef {
  /** The directory the record was claimed from. */
  from: 'pending' | 'awaiting';
  path: string;
  bytes: Uint8Array;
  check: RecordCheck;
}

/**
 * Claims `pending/<taskId>.tap.json`, read at `readEpoch`, as epoch `readEpoch + 1`; null when
 * another actor was faster. The claimed file is read back: if its `state.epoch` is not
 * `readEpoch` the file is a later publication than the one read (the task went round while this
 * actor waited), and it goes back to `pending/` unchanged, so that a claim's epoch is never
 * reused (spec: bindings-workspace#claiming).
 */
export async function claimPending(ws: Workspace, taskId: string, readEpoch: number, actor: string): Promise<Claim | null> {
  return claimFrom(ws, 'pending', taskId, readEpoch, actor);
}

/**
 * Claims `awaiting/<taskId>.tap.json` like `claimPending`. The caller checks first that a decision
 * for the record's current plan exists (see `approvalOf`; spec: bindings-workspace#approval-and-cancel).
 */
export async function claimAwaiting(ws: Workspace, taskId: string, readEpoch: number, actor: string): Promise<Claim | null> {
  return claimFrom(ws, 'awaiting', taskId, readEpoch, actor);
}

async function claimFrom(
  ws: Workspace,
  dir: 'pending' | 'awaiting',
  taskId: string,
  readEpoch: number,
  actor: string,
): Promise<Claim | null> {
  const epoch = readEpoch + 1;
  const from = ws.paths.record(dir, taskId);
  const to = ws.paths.claim(taskId, epoch);
  // A claimed file of that name exists only if two records share a task id; rename would replace it.
  if (entryExists(to)) return null;
  const lockMode = ws.config.claim_mode === 'lock';
  if (lockMode && !(await takeLock(ws.paths.lock(taskId, epoch, 'claim'), actor))) return null;
  try {
    renameNow(from, to);
  } catch (err) {
    if (!isMissing(err)) throw err;
    // In lock mode the lock decided; a rename that reports ENOENT may still have happened.
    if (!lockMode || !entryExists(to)) return null;
  }
  await fsyncDirs(ws.paths.dir(dir), ws.paths.dir('processing'));
  const read = await readBounded(to, MAX_RECORD_BYTES);
  if (!read) return null;
  const check = checkRecordBytes(read.bytes, taskId, read.oversized);
  const claim: Claim = { from: dir, taskId, epoch, digest: sha256Hex(read.bytes), path: to, bytes: read.bytes, check };
  const contentEpoch = check.ok ? check.record.state.epoch : check.epoch;
  if (contentEpoch !== null && contentEpoch !== readEpoch) {
    await returnUnchanged(ws, claim, actor);
    return null;
  }
  return claim;
}

/** Puts a claimed record back where it was claimed from, exactly as it was, through a normal transition. */
export async function returnUnchanged(ws: Workspace, claim: Claim, actor: string): Promise<boolean> {
  const outcome = await commitTransition(ws, claim, { dir: claim.from, bytes: claim.bytes }, actor);
  return outcome.ok;
}
