/**
 * Lock files by the link-count method, for file systems whose rename is not atomic: create a
 * unique file, link(2) it to the lock name, and count the lock as taken iff the unique file's
 * link count is then 2, whatever link returned (spec: bindings-workspace#lock-mode).
 */
import { promises as fsp, constants as fsc } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { TMP_PREFIX, fsyncDir, randomHex } from './fsio.ts';

/**
 * Tries to take the lock `lockPath` for `holder`; true iff this call took it. Never uses O_EXCL
 * on the lock name, and never waits: a taken lock is lost to whoever took it.
 */
export async function takeLock(lockPath: string, holder: string, info: Record<string, unknown> = {}): Promise<boolean> {
  const dir = dirname(lockPath);
  const unique = join(dir, `${TMP_PREFIX}lock-${basename(lockPath)}-${randomHex(8)}`);
  // The unique name is ours alone (random), so creating it is not a race.
  const fh = await fsp.open(unique, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_TRUNC, 0o644);
  try {
    await fh.writeFile(JSON.stringify({ ...info, holder, pid: process.pid }) + '\n');
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await fsp.link(unique, lockPath);
  } catch {
    // The result of link is not trusted (a retried NFS request may report EEXIST after success).
  }
  let taken = false;
  try {
    taken = (await fsp.stat(unique)).nlink === 2;
  } finally {
    await fsp.unlink(unique).catch(() => {});
  }
  await fsyncDir(dir);
  return taken;
}

/** Removes a lock file; locks carry the epoch in their name, so this is cleanup, never a hand-over. */
export async function removeLock(lockPath: string): Promise<void> {
  await fsp.unlink(lockPath).catch(() => {});
}
