/**
 * The reading side of a mailbox `mailboxes/<to>/<from>/`: files taken in ascending sequence
 * order, each claimed by a rename into `.inflight/` (files left there by a crash first), delivered,
 * recorded in a durable deduplication store, then deleted (spec: bindings-workspace#mailboxes).
 */
import { constants as fsc, promises as fsp, watch, type FSWatcher } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { DEFAULT_MAX_FRAME_BYTES, checkMaxFrameBytes } from '../transports/frame.ts';
import type { InboundFrame } from '../transports/transport.ts';
import {
  ensureDir,
  fsyncDir,
  fsyncDirs,
  isMissing,
  isUnreadable,
  listNames,
  NotRegularFile,
  openRegular,
  readPeerFile,
  sha256Hex,
  unlinkIfExists,
  writeAtomic,
} from './fsio.ts';
import { mailboxDir, parseMailboxName } from './mailbox-writer.ts';
import { setAside } from './unreadable.ts';

/** The directory inside a mailbox for files that could not be read, each with a reason. */
export const UNREADABLE_MAILBOX_DIR = '.unreadable';

/** Which file a delivered frame came from. */
export interface MailboxDelivery {
  from: string;
  seq: number;
  /** The message's `message_id` when the file was readable JSON with one. */
  messageId: string | null;
  /** The key the delivery is deduplicated by: `<seq>:<message_id>` (or the content digest when there is no id). */
  key: string;
  /** True when the file was found in `.inflight/`, left there by a reader that stopped. */
  redelivered: boolean;
}

/**
 * Remembers which deliveries took effect. `has` is asked before a delivery, `add` after it; a
 * store whose `add` writes in the same atomic step as the effect makes each message take effect
 * exactly once.
 */
export interface DedupStore {
  has(key: string): boolean | Promise<boolean>;
  add(key: string): Promise<void>;
}

/** The most bytes of a `.dedup` file read back (spec: bindings-workspace#peer-files). */
export const MAX_DEDUP_BYTES = 8 * 1024 * 1024;

/**
 * The default DedupStore: an append-only file of keys, flushed on every add, bounded to the
 * `capacity` most recent keys (older ones are dropped when the file is compacted). The file lies
 * in a directory the sending peer can write, so it is opened without following a symlink or
 * blocking, must be a regular file, and is read only up to MAX_DEDUP_BYTES; anything else there
 * is moved into the mailbox's `.unreadable/` and the store starts empty (spec: bindings-workspace#peer-files).
 */
export class FileDedupStore implements DedupStore {
  private readonly keys = new Set<string>();
  private readonly order: string[] = [];
  private lines = 0;

  private constructor(
    readonly path: string,
    readonly capacity: number,
    private readonly onerror?: (err: Error) => void,
  ) {}

  /** Opens (or creates) the store at `path`. */
  static async open(path: string, capacity = 4096, onerror?: (err: Error) => void): Promise<FileDedupStore> {
    const store = new FileDedupStore(path, capacity, onerror);
    const read = await readPeerFile(path, MAX_DEDUP_BYTES);
    if (isUnreadable(read)) await store.setAside(read.unreadable);
    else if (read?.oversized) await store.setAside(`longer than ${MAX_DEDUP_BYTES} bytes`);
    else if (read) {
      for (const line of Buffer.from(read.bytes).toString('utf8').split('\n')) {
        const key = line.trim();
        if (key === '') continue;
        store.lines += 1;
        store.remember(key);
      }
    }
    return store;
  }

  private async setAside(reason: string): Promise<void> {
    const moved = await setAside(this.path, join(dirname(this.path), UNREADABLE_MAILBOX_DIR), basename(this.path), reason);
    if (moved) this.onerror?.(new Error(`${this.path} could not be used (${reason}); moved to ${moved}`));
  }

  private remember(key: string): void {
    if (this.keys.has(key)) return;
    this.keys.add(key);
    this.order.push(key);
    while (this.order.length > this.capacity) this.keys.delete(this.order.shift()!);
  }

  has(key: string): boolean {
    return this.keys.has(key);
  }

  async add(key: string): Promise<void> {
    if (/[\r\n]/.test(key)) throw new Error('a dedup key must be one line');
    let fh: Awaited<ReturnType<typeof openRegular>>;
    try {
      fh = await openRegular(this.path, fsc.O_WRONLY | fsc.O_APPEND | fsc.O_CREAT);
    } catch (err) {
      if (!(err instanceof NotRegularFile)) throw err;
      // Replaced by something else since it was opened: set it aside and write a fresh file.
      await this.setAside(err.message);
      fh = await openRegular(this.path, fsc.O_WRONLY | fsc.O_APPEND | fsc.O_CREAT | fsc.O_EXCL);
      this.lines = 0;
      if (this.order.length > 0) await fh.write(`${this.order.join('\n')}\n`);
    }
    try {
      await fh.write(`${key}\n`);
      await fh.sync();
    } finally {
      await fh.close();
    }
    this.lines += 1;
    this.remember(key);
    if (this.lines > 2 * this.capacity) {
      await writeAtomic(this.path, `${this.order.join('\n')}\n`);
      this.lines = this.order.length;
    }
  }
}

/** Options of a MailboxReader. */
export interface MailboxReaderOptions {
  /** The workspace root (the directory holding `mailboxes/`). */
  root: string;
  to: string;
  from: string;
  /** Takes each frame, in sequence order; the file is deleted only after the returned promise resolves. */
  deliver: (frame: InboundFrame, info: MailboxDelivery) => void | Promise<void>;
  /** Default: a FileDedupStore at `mailboxes/<to>/<from>/.dedup`. */
  dedup?: DedupStore;
  /** Rescan period when no file event arrives (default 200 ms). */
  pollMs?: number;
  /** Files longer than this arrive as oversized prefixes (default 16 MiB). */
  maxFrameBytes?: number;
  onerror?: (err: Error) => void;
}

/** Reads one mailbox; there must be one reader per mailbox (spec: bindings-workspace#mailboxes). */
export class MailboxReader {
  readonly dir: string;
  readonly inflight: string;
  private dedup: DedupStore | null = null;
  private max: number;
  private running = false;
  private again = false;
  private stopped = false;
  private started = false;
  private watcher: FSWatcher | null = null;
  private timer: NodeJS.Timeout | null = null;
  private pumping: Promise<void> = Promise.resolve();

  constructor(private readonly options: MailboxReaderOptions) {
    this.dir = mailboxDir(options.root, options.to, options.from);
    this.inflight = join(this.dir, '.inflight');
    this.max = checkMaxFrameBytes(options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES);
  }

  /** Sets the frame limit (the negotiated max_message_bytes). */
  setMaxFrameBytes(n: number): void {
    this.max = checkMaxFrameBytes(n);
  }

  /** Creates the mailbox, opens the store and starts delivering. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    await ensureDir(this.inflight);
    this.dedup = this.options.dedup ?? (await FileDedupStore.open(join(this.dir, '.dedup'), undefined, this.options.onerror));
    try {
      this.watcher = watch(this.dir, () => this.kick());
      this.watcher.on('error', () => {
        this.watcher?.close();
        this.watcher = null;
      });
    } catch {
      this.watcher = null;
    }
    this.timer = setInterval(() => this.kick(), this.options.pollMs ?? 200);
    this.kick();
  }

  /** Stops delivering; resolves after the delivery in progress, if any, has finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.watcher?.close();
    if (this.timer) clearInterval(this.timer);
    await this.pumping;
  }

  /** Asks for a look at the mailbox now. */
  kick(): void {
    if (this.stopped || !this.dedup) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    this.pumping = this.pump().finally(() => {
      this.running = false;
      if (this.again && !this.stopped) {
        this.again = false;
        this.kick();
      }
    });
  }

  private async pump(): Promise<void> {
    try {
      while (!this.stopped) {
        this.again = false;
        const left = (await listNames(this.inflight)).filter((n) => parseMailboxName(n) !== null).sort();
        if (left.length > 0) {
          if (!(await this.process(left[0]!, true))) return;
          continue;
        }
        const names = (await listNames(this.dir)).filter((n) => parseMailboxName(n) !== null).sort();
        if (names.length === 0) return;
        const name = names[0]!;
        try {
          await fsp.rename(join(this.dir, name), join(this.inflight, name));
          await fsyncDirs(this.dir, this.inflight);
        } catch (err) {
          if (isMissing(err)) continue;
          throw err;
        }
        if (!(await this.process(name, false))) return;
      }
    } catch (err) {
      this.options.onerror?.(err as Error);
    }
  }

  /** Delivers one claimed file; false when delivery failed (the file stays in `.inflight/` for a later try). */
  private async process(name: string, redelivered: boolean): Promise<boolean> {
    const path = join(this.inflight, name);
    const seq = parseMailboxName(name)!;
    const read = await readPeerFile(path, this.max);
    if (!read) return true;
    if (isUnreadable(read)) {
      // spec: bindings-workspace#peer-files — never left in .inflight/ to be retried forever
      const moved = await setAside(path, join(this.dir, UNREADABLE_MAILBOX_DIR), `.inflight/${name}`, read.unreadable);
      if (moved) this.options.onerror?.(new Error(`mailbox file ${name} cannot be read (${read.unreadable}); moved to ${moved}`));
      return true;
    }
    const frame: InboundFrame = { bytes: read.bytes, oversized: read.oversized, byteLength: read.size };
    let messageId: string | null = null;
    if (!read.oversized) {
      try {
        const id = (JSON.parse(Buffer.from(read.bytes).toString('utf8')) as { message_id?: unknown }).message_id;
        if (typeof id === 'string') messageId = id;
      } catch {
        // not JSON: the receiver answers it; it is deduplicated by its digest
      }
    }
    const key = `${seq}:${messageId !== null && !/[\r\n]/.test(messageId) ? messageId : 'sha256-' + sha256Hex(read.bytes)}`;
    const dedup = this.dedup!;
    if (!(await dedup.has(key))) {
      try {
        await this.options.deliver(frame, { from: this.options.from, seq, messageId, key, redelivered });
      } catch (err) {
        this.options.onerror?.(err as Error);
        return false;
      }
      await dedup.add(key);
    }
    await unlinkIfExists(path);
    await fsyncDir(this.inflight);
    return true;
  }
}
