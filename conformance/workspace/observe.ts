/**
 * What the harness sees of a workspace: every name that appears in the task directories (fs
 * events with a polling fallback, so that a claim that lives for a millisecond is still seen),
 * and small readers for records and files (spec: bindings-workspace#layout).
 */
import { promises as fsp, watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import { checkRecordBytes, type TaskRecord } from '../../reference/workspace/index.ts';
import { pollFor, type PollClock } from '../stall-aware.ts';

/** One name seen in a watched directory. */
export interface Sighting {
  /** Milliseconds since the observer started. */
  at: number;
  dir: string;
  name: string;
}

/** Records every name that appears in a few directories. */
export class DirObserver {
  readonly sightings: Sighting[] = [];
  private readonly known = new Map<string, Set<string>>();
  private readonly watchers: FSWatcher[] = [];
  private readonly timer: NodeJS.Timeout;
  private readonly t0 = performance.now();

  constructor(readonly dirs: Record<string, string>) {
    for (const [label, path] of Object.entries(dirs)) {
      this.known.set(label, new Set());
      try {
        const w = watch(path, (_event, name) => {
          if (typeof name === 'string') this.saw(label, name);
          void this.scan(label, path);
        });
        w.on('error', () => w.close());
        this.watchers.push(w);
      } catch {
        // polling below still sees everything that lives long enough
      }
      void this.scan(label, path);
    }
    this.timer = setInterval(() => {
      for (const [label, path] of Object.entries(dirs)) void this.scan(label, path);
    }, 100);
  }

  /** Milliseconds since the observer started. */
  now(): number {
    return performance.now() - this.t0;
  }

  private saw(label: string, name: string): void {
    const set = this.known.get(label)!;
    if (set.has(name)) return;
    set.add(name);
    this.sightings.push({ at: this.now(), dir: label, name });
  }

  private async scan(label: string, path: string): Promise<void> {
    try {
      for (const name of await fsp.readdir(path)) this.saw(label, name);
    } catch {
      // the directory is gone; nothing to see
    }
  }

  /** Every name seen in `dir` that starts with `prefix`. */
  names(dir: string, prefix: string): string[] {
    return this.sightings.filter((s) => s.dir === dir && s.name.startsWith(prefix)).map((s) => s.name);
  }

  /** The claim names (`<id>@<n>.tap.json`) seen for a task. */
  claims(taskId: string): string[] {
    return this.names('processing', `${taskId}@`).filter((n) => /^[^@]+@\d+\.tap\.json$/.test(n));
  }

  close(): void {
    clearInterval(this.timer);
    for (const w of this.watchers) w.close();
  }
}

/** A record file as read: its bytes, inode, and the record when it is one. */
export interface ReadRecord {
  bytes: Buffer;
  ino: number;
  record: TaskRecord | null;
  /** Why the bytes are not a valid record, when they are not. */
  problem?: string;
}

/** Reads a record file; null when it does not exist. */
export async function readRecordFile(path: string, taskId: string): Promise<ReadRecord | null> {
  let fh;
  try {
    fh = await fsp.open(path, 'r');
  } catch {
    return null;
  }
  try {
    const st = await fh.stat();
    const bytes = await fh.readFile();
    const check = checkRecordBytes(bytes, taskId);
    return check.ok
      ? { bytes, ino: st.ino, record: check.record }
      : { bytes, ino: st.ino, record: null, problem: `${check.code}: ${check.message}` };
  } finally {
    await fh.close();
  }
}

/** Reads a file; null when it is missing. */
export async function readOrNull(path: string): Promise<Buffer | null> {
  return fsp.readFile(path).catch(() => null);
}

/** The inode of a path (not following a final link), or null. */
export async function inodeOf(path: string): Promise<number | null> {
  return fsp.lstat(path).then(
    (s) => s.ino,
    () => null,
  );
}

/** A poll's clock on the monotonic timer. */
const MONOTONIC: PollClock = { now: () => performance.now(), sleep: (ms) => new Promise((r) => setTimeout(r, ms)) };

/** Polls `probe` every `everyMs` until it returns a value (not null) or `ms` of running time passed (stalls not counted: stall-aware.ts); null then. */
export async function poll<T>(probe: () => Promise<T | null> | T | null, ms: number, everyMs = 25): Promise<T | null> {
  return (await pollFor(async () => (await probe()) ?? undefined, ms, everyMs, MONOTONIC)) ?? null;
}

/** Names in a directory, or [] when it does not exist. */
export async function listDir(path: string): Promise<string[]> {
  return fsp.readdir(path).catch(() => []);
}

/** The files of one claim present in `processing/` now: `<id>@<n>.*`. */
export async function claimFiles(processing: string, taskId: string): Promise<string[]> {
  return (await listDir(processing)).filter((n) => n.startsWith(`${taskId}@`));
}

/** `path` joined under a root. */
export function under(root: string, ...parts: string[]): string {
  return join(root, ...parts);
}
