/**
 * The agent's journal: an append-only JSONL file in the state directory, each record written
 * and fsync'd before the message or effect it guards (spec: tasks#durability). It is read back
 * as a stream of lines, a torn last line is cut off before anything is appended, a failed
 * append is cut off again so that the next record starts on a clean line, and it is compacted
 * while the agent runs (spec: tasks#journal).
 */
import { closeSync, fsyncSync, ftruncateSync, fstatSync, mkdirSync, openSync, readSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Plan } from './model.ts';
import type { SessionInfo } from './sessions.ts';
import type { Checkpoint } from './tasks.ts';

/** The journal's file name inside the state directory. */
export const JOURNAL_FILE = 'journal.jsonl';

/** Names a task in the journal. */
export interface TaskRef {
  principal: string;
  task_id: string;
}

/** One journal record. */
export type JournalRecord =
  | { t: 'session'; info: SessionInfo }
  | { t: 'session-end'; id: string }
  | ({
      t: 'task';
      session_id: string;
      capability: string;
      input: unknown;
      authorization?: unknown;
      fingerprint: string;
      idempotency_key?: string;
      previous_task_id?: string;
      attempt: number;
      created_at: number;
      deadline: number;
      /** A quiet task (spec: tasks#quiet-tasks). */
      quiet?: true;
      /** The trace, the 1.1 carried metadata and delegation path the task keeps across a restart (spec: mesh#trace, mesh#delegation). */
      trace?: { trace_id: string; span_id?: string };
      carried?: Record<string, unknown>;
      delegation?: string[];
    } & TaskRef)
  | ({ t: 'msg'; seq: number; text: string; state: string; at: number } & TaskRef)
  | ({ t: 'bind'; session_id: string } & TaskRef)
  | ({ t: 'cancel' } & TaskRef)
  | ({ t: 'ckpt'; checkpoint: Checkpoint } & TaskRef)
  | ({ t: 'effect'; phase: 'begin' | 'end' } & TaskRef)
  | ({ t: 'plan'; plan_id: string; state: string; plan?: Plan; revision_of?: string; feedback?: string } & TaskRef)
  | { t: 'release'; principal: string; capability: string; key: string }
  | { t: 'kv'; key: string; value: unknown };

/** The file operations the journal uses; tests replace them to simulate a failing disk. */
export interface JournalIo {
  write(fd: number, buffer: Uint8Array, offset: number, length: number, position: number | null): number;
  fsync(fd: number): void;
  ftruncate(fd: number, length: number): void;
}

const nodeIo: JournalIo = {
  write: (fd, buffer, offset, length, position) => writeSync(fd, buffer, offset, length, position),
  fsync: (fd) => fsyncSync(fd),
  ftruncate: (fd, length) => ftruncateSync(fd, length),
};

/** The journal's bounds (spec: tasks#journal); every one has a default. */
export interface JournalOptions {
  /** Compact once the file has grown this many bytes past its last compacted size (default 64 MiB). */
  compactBytes?: number;
  /** The most bytes of one task's retained messages kept in the journal (default 8 MiB). */
  maxTaskBytes?: number;
  /** The most live journal bytes of one principal; past it new tasks are refused with BUSY (default 256 MiB). */
  maxPrincipalBytes?: number;
  /** The longest record read back (default 64 MiB); a longer line is skipped as corrupt. */
  maxRecordBytes?: number;
  /** The size of each read when the journal is read back (default 1 MiB). */
  readChunkBytes?: number;
  /** Replaces the file operations (tests). */
  io?: Partial<JournalIo>;
  /** Reports what the journal could not do (a failed compaction, a skipped line). */
  log?: (message: string) => void;
}

/** The journal's bounds with their defaults filled in. */
export interface JournalLimits {
  compactBytes: number;
  maxTaskBytes: number;
  maxPrincipalBytes: number;
  maxRecordBytes: number;
  readChunkBytes: number;
}

/** The bounds of `options`, defaults filled in. */
export function journalLimits(options: JournalOptions = {}): JournalLimits {
  return {
    compactBytes: options.compactBytes ?? 64 * 1024 * 1024,
    maxTaskBytes: options.maxTaskBytes ?? 8 * 1024 * 1024,
    maxPrincipalBytes: options.maxPrincipalBytes ?? 256 * 1024 * 1024,
    maxRecordBytes: options.maxRecordBytes ?? 64 * 1024 * 1024,
    readChunkBytes: options.readChunkBytes ?? 1024 * 1024,
  };
}

/** A record could not be made durable: nothing that depends on it may be acknowledged. */
export class JournalWriteError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = 'JournalWriteError';
  }
}

/** The principal a record is charged to, if any. */
function principalOf(record: JournalRecord): string | undefined {
  return 'principal' in record ? record.principal : undefined;
}

/** An open journal. */
export class Journal {
  readonly limits: JournalLimits;
  private fd: number;
  private readonly io: JournalIo;
  private readonly log: (message: string) => void;
  /** Bytes of the file that hold whole records; everything after it is cut off before the next append. */
  private size: number;
  private dirty = false;
  private compactAt: number;
  private compactScheduled = false;
  /** Bytes charged to each principal since (and including) the last compaction. */
  private readonly principalBytes = new Map<string, number>();
  /** Sessions journaled but not yet ended: kept across a compaction even before the runtime lists them. */
  private readonly openSessions = new Map<string, SessionInfo>();
  /** Builds the records of the current state; set by the agent, used by compaction. */
  snapshot?: () => Iterable<JournalRecord>;

  private constructor(
    private readonly dir: string,
    fd: number,
    size: number,
    options: JournalOptions,
  ) {
    this.fd = fd;
    this.size = size;
    this.limits = journalLimits(options);
    this.io = { ...nodeIo, ...options.io };
    this.log = options.log ?? (() => {});
    this.compactAt = size + this.limits.compactBytes;
  }

  /**
   * Opens (creating) the journal in `dir`: cuts off a torn last line, then returns the journal
   * and its records, read lazily line by line (never as one string). Needs no free space.
   */
  static open(dir: string, options: JournalOptions = {}): { journal: Journal; records: Iterable<JournalRecord> } {
    mkdirSync(dir, { recursive: true });
    const path = join(dir, JOURNAL_FILE);
    const fd = openSync(path, 'a+');
    closeSync(fd);
    const rw = openSync(path, 'r+');
    const limits = journalLimits(options);
    const size = lastLineEnd(rw, fstatSync(rw).size, limits.readChunkBytes);
    const journal = new Journal(dir, rw, size, options);
    if (size < fstatSync(rw).size) {
      journal.log(`the journal ended in a torn record; cut it off at byte ${size}`);
      journal.io.ftruncate(rw, size);
    }
    return { journal, records: journal.read(size) };
  }

  private *read(end: number): Generator<JournalRecord> {
    for (const line of readLines(this.fd, end, this.limits, this.log)) {
      const record = parseRecord(line);
      if (record === undefined) {
        this.log('the journal holds a line that is not a record; it is skipped');
        continue;
      }
      this.track(record, Buffer.byteLength(line) + 1);
      yield record;
    }
  }

  /** Live journal bytes charged to `principal` (spec: tasks#journal). */
  bytesOf(principal: string): number {
    return this.principalBytes.get(principal) ?? 0;
  }

  /**
   * Appends one record and waits for it to reach the disk. On failure the partial write is cut
   * off and JournalWriteError is thrown: the record is not durable.
   */
  append(record: JournalRecord): void {
    if (this.dirty) this.cutTail();
    const buffer = Buffer.from(`${JSON.stringify(record)}\n`);
    try {
      let done = 0;
      while (done < buffer.length) done += this.io.write(this.fd, buffer, done, buffer.length - done, this.size + done);
      this.io.fsync(this.fd);
    } catch (err) {
      this.dirty = true;
      this.cutTail();
      const code = (err as NodeJS.ErrnoException).code;
      throw new JournalWriteError(`the journal in ${this.dir} could not be written (${code ?? (err as Error).message})`, code);
    }
    this.size += buffer.length;
    this.track(record, buffer.length);
    if (this.size >= this.compactAt) this.scheduleCompaction();
  }

  /** Cuts the file back to its last whole record; needs no free space. */
  private cutTail(): void {
    try {
      this.io.ftruncate(this.fd, this.size);
      this.dirty = false;
    } catch {
      // Still dirty: the next append writes at `size` anyway and tries again.
    }
  }

  private track(record: JournalRecord, bytes: number): void {
    if (record.t === 'session') this.openSessions.set(record.info.id, record.info);
    if (record.t === 'session-end') this.openSessions.delete(record.id);
    const principal = principalOf(record);
    if (principal !== undefined) this.principalBytes.set(principal, this.bytesOf(principal) + bytes);
  }

  /** Sessions journaled and not ended, for compaction. */
  journaledSessions(): Iterable<SessionInfo> {
    return this.openSessions.values();
  }

  private scheduleCompaction(): void {
    if (this.compactScheduled || !this.snapshot) return;
    this.compactScheduled = true;
    // After the current step: every record is followed synchronously by the state change it guards.
    setImmediate(() => {
      this.compactScheduled = false;
      this.compact();
    }).unref();
  }

  /**
   * Replaces the journal with the records of the current state: written to a temporary file,
   * fsync'd, renamed over the journal, directory fsync'd. If that fails (a full disk), the old
   * journal stays in use and the next attempt waits for another `compactBytes` of growth.
   * Returns true when the journal was replaced.
   */
  compact(): boolean {
    if (!this.snapshot) return false;
    const tmp = join(this.dir, `.tmp-journal-${process.pid}`);
    let fd: number | undefined;
    const bytes = new Map<string, number>();
    const sessions = new Map<string, SessionInfo>();
    let written = 0;
    try {
      fd = openSync(tmp, 'w');
      const pending: Buffer[] = [];
      let pendingBytes = 0;
      const flush = (): void => {
        const chunk = Buffer.concat(pending);
        let done = 0;
        while (done < chunk.length) done += this.io.write(fd!, chunk, done, chunk.length - done, written + done);
        written += chunk.length;
        pending.length = 0;
        pendingBytes = 0;
      };
      for (const record of this.snapshot()) {
        const line = Buffer.from(`${JSON.stringify(record)}\n`);
        pending.push(line);
        pendingBytes += line.length;
        const principal = principalOf(record);
        if (principal !== undefined) bytes.set(principal, (bytes.get(principal) ?? 0) + line.length);
        if (record.t === 'session') sessions.set(record.info.id, record.info);
        if (pendingBytes >= this.limits.readChunkBytes) flush();
      }
      flush();
      this.io.fsync(fd);
      closeSync(fd);
      fd = undefined;
      renameSync(tmp, join(this.dir, JOURNAL_FILE));
    } catch (err) {
      if (fd !== undefined) closeSync(fd);
      try {
        unlinkSync(tmp);
      } catch {
        // never created
      }
      this.compactAt = this.size + this.limits.compactBytes;
      this.log(`could not compact the journal in ${this.dir} (${(err as Error).message}); it stays as it is`);
      return false;
    }
    syncDir(this.dir);
    closeSync(this.fd);
    this.fd = openSync(join(this.dir, JOURNAL_FILE), 'r+');
    this.size = written;
    this.dirty = false;
    this.compactAt = written + Math.max(this.limits.compactBytes, written);
    this.principalBytes.clear();
    for (const [principal, n] of bytes) this.principalBytes.set(principal, n);
    this.openSessions.clear();
    for (const [id, info] of sessions) this.openSessions.set(id, info);
    return true;
  }

  /** The size in bytes of the journal's whole records. */
  bytes(): number {
    return this.size;
  }

  close(): void {
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
  }
}

/** The offset just after the last newline before `size`: where the whole records end. */
function lastLineEnd(fd: number, size: number, chunkBytes: number): number {
  const buffer = Buffer.alloc(Math.min(chunkBytes, Math.max(size, 1)));
  let end = size;
  while (end > 0) {
    const start = Math.max(0, end - buffer.length);
    const n = readSync(fd, buffer, 0, end - start, start);
    const at = buffer.subarray(0, n).lastIndexOf(0x0a);
    if (at >= 0) return start + at + 1;
    end = start;
  }
  return 0;
}

/** The lines of the first `end` bytes of `fd`, read in chunks; a line longer than maxRecordBytes is skipped. */
function* readLines(fd: number, end: number, limits: JournalLimits, log: (message: string) => void): Generator<string> {
  const buffer = Buffer.alloc(limits.readChunkBytes);
  let parts: Buffer[] = [];
  let partBytes = 0;
  let skipping = false;
  let position = 0;
  const keep = (piece: Buffer): void => {
    if (skipping) return;
    partBytes += piece.length;
    if (partBytes > limits.maxRecordBytes) {
      log(`the journal holds a line longer than ${limits.maxRecordBytes} bytes; it is skipped`);
      skipping = true;
      parts = [];
    } else parts.push(Buffer.from(piece));
  };
  while (position < end) {
    const n = readSync(fd, buffer, 0, Math.min(buffer.length, end - position), position);
    if (n === 0) break;
    position += n;
    let from = 0;
    for (let at = buffer.indexOf(0x0a, 0); at >= 0 && at < n; at = buffer.indexOf(0x0a, from)) {
      keep(buffer.subarray(from, at));
      const line = skipping ? '' : Buffer.concat(parts).toString('utf8');
      parts = [];
      partBytes = 0;
      skipping = false;
      from = at + 1;
      if (line.trim() !== '') yield line;
    }
    if (from < n) keep(buffer.subarray(from, n));
  }
}

/**
 * Parses one line. A line where an append failed and a later record was written onto the torn
 * part (journals written before torn tails were cut off) yields that later record.
 */
function parseRecord(line: string): JournalRecord | undefined {
  try {
    return JSON.parse(line) as JournalRecord;
  } catch {
    const at = line.lastIndexOf('{"t":');
    if (at <= 0) return undefined;
    try {
      return JSON.parse(line.slice(at)) as JournalRecord;
    } catch {
      return undefined;
    }
  }
}

function syncDir(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Some platforms cannot fsync a directory.
  }
}
