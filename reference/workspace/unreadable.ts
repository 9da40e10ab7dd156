/**
 * Dead-lettering of entries that cannot be read: a task record in `pending/` or `awaiting/`, or a
 * mailbox file, that is not a readable regular file is moved into `tasks/unreadable/` (or the
 * mailbox's `.unreadable/`) with a `<name>.reason.json` beside it, instead of being retried
 * forever (spec: bindings-workspace#peer-files).
 */
import { basename, join } from 'node:path';
import { ensureDir, fsyncDirs, isMissing, randomHex, writeAtomic } from './fsio.ts';
import { promises as fsp } from 'node:fs';

/** The directory of unreadable task records, `tasks/unreadable/`. */
export const UNREADABLE_DIR = 'unreadable';

/** What `<name>.reason.json` says about an entry moved aside. */
export interface UnreadableReason {
  /** Where the entry was found, relative to the workspace or mailbox. */
  from: string;
  reason: string;
  /** When it was moved, ISO 8601. */
  at: string;
}

/**
 * Moves `path` into `intoDir` under a fresh name (the rename moves a symlink or FIFO itself,
 * never what it points at) and writes the reason beside it; null when the entry is already gone.
 */
export async function setAside(path: string, intoDir: string, from: string, reason: string): Promise<string | null> {
  await ensureDir(intoDir);
  const name = `${basename(path)}.${Date.now()}-${randomHex(3)}`;
  const target = join(intoDir, name);
  try {
    await fsp.rename(path, target);
  } catch (err) {
    if (isMissing(err)) return null;
    throw err;
  }
  const why: UnreadableReason = { from, reason, at: new Date().toISOString() };
  await writeAtomic(join(intoDir, `${name}.reason.json`), `${JSON.stringify(why, null, 2)}\n`);
  await fsyncDirs(intoDir);
  return target;
}
