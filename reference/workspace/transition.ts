/**
 * Transitions of a claimed record: prepare the next record in a sidecar, commit by one rename of
 * the claimed file to a commit marker (exactly one competitor wins), publish the prepared record
 * (spec: bindings-workspace#transitions). README.md gives the argument why this is safe.
 */
import type { Workspace } from './workspace.ts';
import {
  entryExists,
  fsyncDir,
  fsyncDirs,
  isMissing,
  randomHex,
  renameNow,
  readBounded,
  readJsonFile,
  sha256Hex,
  unlinkIfExists,
  writeAtomic,
} from './fsio.ts';
import { SIDECAR_KINDS, STATUS_DIR, type RecordStatus, type TaskDir } from './layout.ts';
import { removeLock, takeLock } from './lock.ts';
import { MAX_RECORD_BYTES, type TaskRecord } from './record.ts';

/** Which claim a transition ends: the task, the claim's epoch, and the digest of the claimed file as the actor read it. */
export interface ClaimRef {
  taskId: string;
  epoch: number;
  /** SHA-256 (hex) of the claimed file's bytes; the commit is valid only for exactly these bytes. */
  digest: string;
}

/** The next record of a transition and the directory it goes to. */
export interface Prepared {
  dir: TaskDir;
  bytes: string | Uint8Array;
}

/** How a transition ended: published into `dir`, or lost (another actor committed first, or the claimed file was not the record read). */
export type TransitionOutcome = { ok: true; dir: TaskDir; path: string } | { ok: false; reason: 'lost' };

/** Serializes a record the way the library writes every record: two-space JSON and a final newline. */
export function renderRecord(record: TaskRecord): string {
  return JSON.stringify(record, null, 2) + '\n';
}

/** The prepared form of a next record: its bytes and the directory its status gives (spec: bindings-workspace#directories). */
export function prepare(record: TaskRecord): Prepared {
  return { dir: STATUS_DIR[(record.state.status ?? 'pending') as RecordStatus], bytes: renderRecord(record) };
}

const NONCE_WITH_DIGEST = /^[0-9a-f]{12}-([0-9a-f]{32})$/;

/** A transition nonce: 12 random hex digits, then the first 32 hex digits of the claimed file's digest. */
export function transitionNonce(digest: string): string {
  return `${randomHex(6)}-${digest.slice(0, 32)}`;
}

/** The claimed-file digest a nonce carries, or null for a nonce written by another implementation. */
export function nonceDigest(nonce: string): string | null {
  return NONCE_WITH_DIGEST.exec(nonce)?.[1] ?? null;
}

/**
 * Whether a commit marker holds the record its actor claimed: its digest matches the nonce, or,
 * for a nonce without a digest, its `state.epoch` is the claim's epoch minus one.
 */
export function markerIsValid(bytes: Uint8Array, epoch: number, nonce: string): boolean {
  const expected = nonceDigest(nonce);
  if (expected) return sha256Hex(bytes).startsWith(expected);
  try {
    const e = (JSON.parse(Buffer.from(bytes).toString('utf8')) as { state?: { epoch?: unknown } }).state?.epoch;
    return typeof e !== 'number' || e === epoch - 1;
  } catch {
    return true;
  }
}

/** Where a record of a status directory rests when it is published or recovered: a claimed status gives `pending/`. */
function restingDir(dir: TaskDir): TaskDir {
  return dir === 'processing' ? 'pending' : dir;
}

/** The directory a record goes to by the status in its bytes; a claimed status (or none readable) gives `pending/` (for recovery). */
export function dirOfBytes(bytes: Uint8Array): TaskDir {
  try {
    const status = (JSON.parse(Buffer.from(bytes).toString('utf8')) as TaskRecord).state?.status;
    if (typeof status === 'string' && status in STATUS_DIR) {
      return restingDir(STATUS_DIR[status as RecordStatus]);
    }
  } catch {
    // a prepared record is always valid JSON; anything else goes back to pending/
  }
  return 'pending';
}

/**
 * Renames the claimed file to the marker: the single rename that decides a transition. In lock
 * mode the commit lock of the epoch decides first, and a rename that reports ENOENT although the
 * marker exists counts as done (spec: bindings-workspace#lock-mode).
 */
async function commitRename(ws: Workspace, claim: ClaimRef, nonce: string, actor: string): Promise<boolean> {
  const from = ws.paths.claim(claim.taskId, claim.epoch);
  const marker = ws.paths.marker(claim.taskId, claim.epoch, nonce);
  const lockMode = ws.config.claim_mode === 'lock';
  if (lockMode && !(await takeLock(ws.paths.lock(claim.taskId, claim.epoch, 'commit'), actor, { nonce }))) return false;
  try {
    renameNow(from, marker);
  } catch (err) {
    if (!isMissing(err)) throw err;
    if (!lockMode) return false;
    const done = entryExists(marker, true);
    if (!done) return false;
  }
  await fsyncDir(ws.paths.dir('processing'));
  return true;
}

/**
 * Ends a claim with one transition (spec: bindings-workspace#transitions):
 * 1. prepare — the next record goes to `processing/<id>@<epoch>.<nonce>.next.json`;
 * 2. commit — one rename of the claimed file to `processing/<id>@<epoch>.<nonce>.commit`;
 * 3. publish — see `settleMarker`.
 * An actor whose commit fails deletes its prepared record and gets `{ ok: false }`: its work is discarded.
 */
export async function commitTransition(ws: Workspace, claim: ClaimRef, next: Prepared, actor: string): Promise<TransitionOutcome> {
  const nonce = transitionNonce(claim.digest);
  const nextPath = ws.paths.next(claim.taskId, claim.epoch, nonce);
  await writeAtomic(nextPath, next.bytes);
  let committed = false;
  try {
    committed = await commitRename(ws, claim, nonce, actor);
  } finally {
    if (!committed) {
      await unlinkIfExists(nextPath);
      await fsyncDir(ws.paths.dir('processing'));
    }
  }
  if (!committed) return { ok: false, reason: 'lost' };
  const settled = await settleMarker(ws, claim.taskId, claim.epoch, nonce, next);
  if (settled.result !== 'published') return { ok: false, reason: 'lost' };
  return { ok: true, dir: settled.dir, path: ws.paths.record(settled.dir, claim.taskId) };
}

/** What settling a marker did. */
export type Settled = { result: 'published'; dir: TaskDir } | { result: 'returned' } | { result: 'gone' };

/**
 * Completes a committed transition; any actor may call it for any marker, any number of times,
 * and all reach the same decision because it depends only on the marker's bytes and name:
 * - a valid marker publishes its prepared record (if it still exists: otherwise it was published
 *   already) and removes the marker, the claim's sidecars and its locks;
 * - an invalid marker (the claimed file was not the record its actor read) goes back to
 *   `pending/` (or `awaiting/`, by its status) unchanged, and the prepared record is deleted (spec: bindings-workspace#transitions).
 * `own` is the prepared record when the caller is the actor that wrote it, so it is not read back.
 */
export async function settleMarker(ws: Workspace, taskId: string, epoch: number, nonce: string, own?: Prepared): Promise<Settled> {
  const processing = ws.paths.dir('processing');
  const marker = ws.paths.marker(taskId, epoch, nonce);
  const nextPath = ws.paths.next(taskId, epoch, nonce);
  const read = await readBounded(marker, MAX_RECORD_BYTES);
  if (!read) return { result: 'gone' };
  if (!markerIsValid(read.bytes, epoch, nonce)) {
    try {
      // Back where its status puts it: pending/, or awaiting/ for a record claimed from there.
      const home = dirOfBytes(read.bytes);
      renameNow(marker, ws.paths.record(home, taskId));
      await fsyncDirs(processing, ws.paths.dir(home));
    } catch (err) {
      if (!isMissing(err)) throw err;
    }
    await unlinkIfExists(nextPath);
    await fsyncDir(processing);
    return { result: 'returned' };
  }
  // The directory the prepared record goes to, null when it is gone: the actor that prepared it
  // knows what it wrote; any other reads it.
  const dir = own ? restingDir(own.dir) : await readBounded(nextPath, MAX_RECORD_BYTES).then((r) => (r ? dirOfBytes(r.bytes) : null));
  if (dir) {
    try {
      renameNow(nextPath, ws.paths.record(dir, taskId));
      await fsyncDirs(processing, ws.paths.dir(dir));
    } catch (err) {
      if (!isMissing(err)) throw err;
      // another actor published it a moment ago
    }
  }
  await cleanupClaim(ws, taskId, epoch);
  await unlinkIfExists(marker);
  await fsyncDir(processing);
  return dir ? { result: 'published', dir } : { result: 'gone' };
}

/** Removes the sidecars and lock files of a claim whose transition is published. */
export async function cleanupClaim(ws: Workspace, taskId: string, epoch: number): Promise<void> {
  for (const kind of SIDECAR_KINDS) await unlinkIfExists(ws.paths.sidecar(taskId, epoch, kind));
  if (ws.config.claim_mode === 'lock') {
    await removeLock(ws.paths.lock(taskId, epoch, 'claim'));
    await removeLock(ws.paths.lock(taskId, epoch, 'commit'));
  }
}

/**
 * Lock mode only: finishes the commit of an actor that took the commit lock and stopped before
 * its rename, by doing that rename for it (the lock file names the actor's nonce). Returns false
 * when there is nothing that can be finished (spec: bindings-workspace#lock-mode).
 */
export async function finishLockedCommit(ws: Workspace, taskId: string, epoch: number): Promise<boolean> {
  let nonce: unknown;
  try {
    nonce = ((await readJsonFile(ws.paths.lock(taskId, epoch, 'commit'), 64 * 1024)) as { nonce?: unknown } | null)?.nonce;
  } catch {
    return false;
  }
  if (typeof nonce !== 'string' || !NONCE_WITH_DIGEST.test(nonce)) return false;
  const nextPath = ws.paths.next(taskId, epoch, nonce);
  if (!entryExists(nextPath, true)) return false;
  try {
    renameNow(ws.paths.claim(taskId, epoch), ws.paths.marker(taskId, epoch, nonce));
    await fsyncDir(ws.paths.dir('processing'));
  } catch (err) {
    if (!isMissing(err)) throw err;
  }
  await settleMarker(ws, taskId, epoch, nonce);
  return true;
}
