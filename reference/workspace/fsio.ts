/**
 * Durable file operations of the workspace binding: temp file + fsync + rename, publishing a
 * name that must not exist yet with link(2), and flushing directories after renames
 * (spec: bindings-workspace#writing-files).
 *
 * The operations an agent makes for every task (writing, reading and renaming small files,
 * flushing directories) are synchronous system calls behind promise-returning functions. On a
 * local file system each takes microseconds, while an asynchronous call costs a round trip
 * through the thread pool several times that, and a claim, run and commit is some forty of them
 * in a row. The price: a slow disk holds the event loop for the length of its fsync.
 */
import {
  promises as fsp,
  constants as fsc,
  closeSync,
  fstatSync,
  fsyncSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  unlinkSync,
  writeSync,
  type Stats,
} from 'node:fs';
import { createHash, randomBytes, randomFillSync } from 'node:crypto';
import { dirname, join } from 'node:path';

/** The prefix of temporary files; readers skip every name that starts with it (spec: bindings-workspace#writing-files). */
export const TMP_PREFIX = '.tmp-';

/** True for a temporary file name. */
export function isTmp(name: string): boolean {
  return name.startsWith(TMP_PREFIX);
}

/** Random bytes drawn 4 KiB at a time: one call to the system's generator serves hundreds of nonces. */
const pool = Buffer.alloc(4096);
let poolAt = pool.length;

/** Random lowercase hex, `bytes` bytes long (at most 256); used in nonces, lock files and task ids. */
export function randomHex(bytes = 8): string {
  if (bytes > 256) return randomBytes(bytes).toString('hex');
  if (poolAt + bytes > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const hex = pool.toString('hex', poolAt, poolAt + bytes);
  poolAt += bytes;
  return hex;
}

/** SHA-256 of `data` as lowercase hex. */
export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The errno code of a Node file-system error (`ENOENT`, `EEXIST`, …), or undefined. */
export function errnoOf(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : undefined;
}

/** True when `err` is a "no such file" error. */
export function isMissing(err: unknown): boolean {
  return errnoOf(err) === 'ENOENT';
}

/** Flushes a directory's entries to stable storage (spec: bindings-workspace#writing-files). */
export async function fsyncDir(dir: string): Promise<void> {
  const fd = openSync(dir, fsc.O_RDONLY);
  try {
    fsyncSync(fd);
  } catch (err) {
    // Some file systems refuse fsync on directories; their renames are then as durable as they get.
    if (errnoOf(err) !== 'EINVAL' && errnoOf(err) !== 'EISDIR') throw err;
  } finally {
    closeSync(fd);
  }
}

/** Flushes each distinct directory once. */
export async function fsyncDirs(...dirs: string[]): Promise<void> {
  for (const dir of new Set(dirs)) await fsyncDir(dir);
}

/** Temporary names: 72 random bits drawn once per process, then a counter; O_EXCL refuses a name in use all the same. */
const tmpTag = randomBytes(9).toString('hex');
let tmpCount = 0;

/** A temporary name no other writer uses. */
export function tmpName(): string {
  return `${TMP_PREFIX}${tmpTag}${(++tmpCount).toString(36)}`;
}

/** Writes `data` to a fresh `.tmp-*` file in `dir` and flushes it; returns its path. */
export async function writeTemp(dir: string, data: Uint8Array | string): Promise<string> {
  const path = join(dir, tmpName());
  const fd = openSync(path, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, 0o644);
  try {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    for (let off = 0; off < bytes.byteLength; ) off += writeSync(fd, bytes, off, bytes.byteLength - off);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    unlinkQuietly(path);
    throw err;
  }
  closeSync(fd);
  return path;
}

/**
 * Replaces (or creates) `path` atomically: temp file in the same directory, fsync, rename,
 * fsync of the directory (spec: bindings-workspace#writing-files).
 */
export async function writeAtomic(path: string, data: Uint8Array | string): Promise<void> {
  const dir = dirname(path);
  const tmp = await writeTemp(dir, data);
  try {
    renameSync(tmp, path);
  } catch (err) {
    unlinkQuietly(tmp);
    throw err;
  }
  await fsyncDir(dir);
}

/**
 * Publishes `data` under `path` only if no file has that name: temp file, fsync, link(2) to the
 * final name, unlink of the temp name. Throws an `EEXIST` error when the name is taken
 * (spec: bindings-workspace#writing-files).
 */
export async function publishNew(path: string, data: Uint8Array | string): Promise<void> {
  const dir = dirname(path);
  const tmp = await writeTemp(dir, data);
  try {
    linkSync(tmp, path);
  } finally {
    unlinkQuietly(tmp);
  }
  await fsyncDir(dir);
}

/** Renames and flushes both directories; rejects like rename(2) (ENOENT when the source is gone). */
export async function renameDurable(from: string, to: string): Promise<void> {
  renameSync(from, to);
  await fsyncDirs(dirname(from), dirname(to));
}

/** Removes a file if it exists; true when it did. */
export async function unlinkIfExists(path: string): Promise<boolean> {
  // Most names asked about are absent (sidecars never written): ask first rather than build an ENOENT error.
  if (lstatSync(path, { throwIfNoEntry: false }) === undefined) return false;
  try {
    unlinkSync(path);
    return true;
  } catch (err) {
    if (isMissing(err)) return false;
    throw err;
  }
}

/** Renames an entry now (rename(2)); throws as rename(2) fails (ENOENT when the source is gone). */
export function renameNow(from: string, to: string): void {
  renameSync(from, to);
}

/** Whether an entry has that name (lstat(2), never following it): false for ENOENT, or for any error when `quiet`; other errors throw. */
export function entryExists(path: string, quiet = false): boolean {
  if (quiet) return lstatOrNull(path) !== null;
  // No exception (and its stack trace) for the common answer "no such file".
  return lstatSync(path, { throwIfNoEntry: false }) !== undefined;
}

/** lstat(2) of an entry, or null when it cannot be had. */
export function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) ?? null;
  } catch {
    return null;
  }
}

/** Removes a file, ignoring every error: the clean-up of a temporary name. */
function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone, or not ours to remove
  }
}

/** What `readBounded` read: at most `max + 1` bytes, and whether the file was longer than `max`. */
export interface BoundedRead {
  bytes: Uint8Array;
  size: number;
  oversized: boolean;
}

/** Flags that never follow a final symlink and never block on opening a FIFO or a device (spec: bindings-workspace#peer-files). */
export const PEER_OPEN_FLAGS = fsc.O_NOFOLLOW | fsc.O_NONBLOCK;

/** A file a peer can write is something other than a regular file (a FIFO, device, symlink or directory). */
export class NotRegularFile extends Error {
  readonly code = 'ENOTREG';
  constructor(
    readonly path: string,
    readonly kind: string,
  ) {
    super(`${path} is a ${kind}, not a regular file`);
  }
}

function kindOf(st: {
  isFIFO(): boolean;
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
  isDirectory(): boolean;
  isSocket(): boolean;
}): string {
  if (st.isFIFO()) return 'FIFO';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'device';
  if (st.isDirectory()) return 'directory';
  if (st.isSocket()) return 'socket';
  return 'special file';
}

/** The NotRegularFile an open with PEER_OPEN_FLAGS failed for (a final symlink, a directory), or null for any other error. */
function notRegularOpen(path: string, err: unknown): NotRegularFile | null {
  const code = errnoOf(err);
  if (code === 'ELOOP' || code === 'EMLINK') return new NotRegularFile(path, 'symbolic link');
  if (code === 'EISDIR') return new NotRegularFile(path, 'directory');
  return null;
}

/**
 * Opens a file a peer can write: no final symlink (ELOOP becomes NotRegularFile), no blocking
 * open, and a regular file by fstat, else NotRegularFile (spec: bindings-workspace#peer-files).
 */
export async function openRegular(path: string, flags: number = fsc.O_RDONLY, mode = 0o644): Promise<fsp.FileHandle> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(path, flags | PEER_OPEN_FLAGS, mode);
  } catch (err) {
    throw notRegularOpen(path, err) ?? err;
  }
  const st = await fh.stat().catch(async (err: unknown) => {
    await fh.close();
    throw err;
  });
  if (!st.isFile()) {
    await fh.close();
    throw new NotRegularFile(path, kindOf(st));
  }
  return fh;
}

/** What `readBounded` read: at most `max + 1` bytes, and whether the file was longer than `max`. */
export interface BoundedRead {
  bytes: Uint8Array;
  size: number;
  oversized: boolean;
}

/** A file that is there but cannot be read as a regular file, with the reason. */
export interface Unreadable {
  unreadable: string;
}

/**
 * Reads a file a peer can write, keeping at most `max + 1` bytes: its bytes, null when it is
 * gone, or why it cannot be read (not a regular file, no permission) (spec: bindings-workspace#peer-files).
 */
export async function readPeerFile(path: string, max: number): Promise<BoundedRead | Unreadable | null> {
  let fd: number;
  try {
    fd = openSync(path, fsc.O_RDONLY | PEER_OPEN_FLAGS);
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOENT') return null;
    const notRegular = notRegularOpen(path, err);
    if (notRegular) return { unreadable: notRegular.message };
    if (code === 'EACCES' || code === 'EPERM') return { unreadable: `${path} cannot be read (${code})` };
    throw err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { unreadable: new NotRegularFile(path, kindOf(st)).message };
    const limit = Math.min(st.size, max + 1);
    const buf = Buffer.alloc(limit);
    let off = 0;
    while (off < limit) {
      const n = readSync(fd, buf, off, limit - off, off);
      if (n === 0) break;
      off += n;
    }
    return { bytes: buf.subarray(0, off), size: Math.max(st.size, off), oversized: st.size > max };
  } catch (err) {
    return { unreadable: `${path} cannot be read (${errnoOf(err) ?? (err as Error).message})` };
  } finally {
    closeSync(fd);
  }
}

/** True when `read` is a refusal rather than bytes. */
export function isUnreadable(read: BoundedRead | Unreadable | null): read is Unreadable {
  return read !== null && 'unreadable' in read;
}

/** Reads a regular file without following a final symlink or blocking, keeping at most `max + 1` bytes; null when it is gone or not a readable regular file. */
export async function readBounded(path: string, max: number): Promise<BoundedRead | null> {
  const read = await readPeerFile(path, max);
  return isUnreadable(read) ? null : read;
}

/** Reads and parses a small JSON file; null when it is missing or not JSON. */
export async function readJsonFile(path: string, max = 1024 * 1024): Promise<unknown> {
  const r = await readBounded(path, max);
  if (!r || r.oversized) return null;
  try {
    return JSON.parse(Buffer.from(r.bytes).toString('utf8'));
  } catch {
    return null;
  }
}

/** Lists a directory's entry names, or [] when it does not exist. */
export async function listNames(dir: string): Promise<string[]> {
  try {
    return readdirSync(dir);
  } catch (err) {
    if (isMissing(err)) return [];
    throw err;
  }
}

/** Creates a directory (and its parents) and flushes the parent that gained it. */
export async function ensureDir(dir: string): Promise<void> {
  try {
    mkdirSync(dir);
    await fsyncDir(dirname(dir));
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'EEXIST') return;
    if (code === 'ENOENT') {
      await ensureDir(dirname(dir));
      return ensureDir(dir);
    }
    throw err;
  }
}
