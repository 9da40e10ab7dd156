import type { Writable } from 'node:stream';
import { checkOneLine } from './lines.ts';
import { HANDED_OVER } from './transport.ts';

/** Error codes meaning the reading side of a stream is gone, so a write can only be dropped. */
const PEER_GONE = new Set(['EPIPE', 'ECONNRESET', 'EOF', 'ERR_STREAM_DESTROYED', 'ERR_STREAM_WRITE_AFTER_END']);

/** True if `err` says the reader of a stream went away (spec: shutdown#epipe). */
export function isPeerGone(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && PEER_GONE.has(code);
}

/**
 * Held text beyond this many UTF-16 units is written at once rather than at the end of the turn.
 * Held to the end of the turn, everything one side of a pipe has to say goes out after all its
 * work, so the two sides take turns and each waits half the time: with 64 tasks in flight over
 * stdio, 65,536 here left each process busy 0.56–0.64 of the time and 8,192 0.8–0.9, a third more
 * tasks a second; a stream of small events still goes out in writes of 8 KiB.
 */
export const FLUSH_AT = 8 * 1024;

/** What a StreamWriter reports to its owner. */
export interface StreamWriterHooks {
  /** The reader went away (EPIPE and the like); later writes are dropped. */
  onGone(err: Error): void;
  /** Any other write error. */
  onError(err: Error): void;
}

/**
 * Writes to a Node stream with backpressure, and turns "the reader is gone" into a state
 * instead of a crash: it always listens for 'error', and drops writes once the peer is gone.
 * Text written in one turn of the event loop goes to the stream in order, as one write at the end
 * of the turn or, once more than FLUSH_AT is held, at once.
 */
export class StreamWriter {
  private gone = false;
  private readonly waiters = new Set<(err?: Error) => void>();
  /** Text written this turn, not yet handed to the stream. */
  private batch: string[] = [];
  private batchLength = 0;
  /** Settles when the batch has been handed over: what every write of the turn returns. */
  private batchDone?: Promise<void>;
  private settleBatch?: { resolve: () => void; reject: (err: Error) => void };

  /** Wraps `stream` and installs its 'error' listener at once. */
  constructor(
    private readonly stream: Writable,
    private readonly hooks: StreamWriterHooks,
  ) {
    stream.on('error', (err: Error) => this.fail(err));
    stream.on('close', () => this.wake());
    stream.on('drain', () => this.wake());
  }

  /** True once the reader went away or the stream was ended or destroyed. */
  get closed(): boolean {
    return this.gone || this.stream.destroyed || this.stream.writableEnded;
  }

  /** Bytes written but not yet flushed to the stream's reader (text of this turn counted in UTF-16 units). */
  get pending(): number {
    return this.stream.writableLength + this.batchLength;
  }

  /**
   * Writes `data`; resolves when the stream accepts more (drain), or at once if it is gone. Text
   * is held until the end of the turn and written with the rest of the turn's text; bytes go at
   * once, after the text held before them.
   */
  write(data: string | Uint8Array): Promise<void> {
    if (this.closed) return HANDED_OVER;
    if (typeof data !== 'string') {
      this.flush();
      return this.writeNow(data);
    }
    this.batch.push(data);
    this.batchLength += data.length;
    // A burst (a handler emitting thousands of events in one turn) goes out as it grows, so the
    // held text never counts as unread by the peer (spec: limits#back-pressure).
    if (this.batchLength >= FLUSH_AT) {
      const done = this.batchDone ?? Promise.resolve();
      if (!this.batchDone) {
        const text = this.batch.join('');
        this.batch = [];
        this.batchLength = 0;
        return this.writeNow(text);
      }
      this.flush();
      return done;
    }
    if (!this.batchDone) {
      this.batchDone = new Promise<void>((resolve, reject) => {
        this.settleBatch = { resolve, reject };
      });
      setImmediate(this.flush);
    }
    return this.batchDone;
  }

  /** Hands the text held this turn to the stream as one write. */
  private readonly flush = (): void => {
    const settle = this.settleBatch;
    if (!settle) return;
    const text = this.batch.length === 1 ? this.batch[0]! : this.batch.join('');
    this.batch = [];
    this.batchLength = 0;
    this.batchDone = undefined;
    this.settleBatch = undefined;
    this.writeNow(text).then(settle.resolve, settle.reject);
  };

  private writeNow(data: string | Uint8Array): Promise<void> {
    if (this.closed) return HANDED_OVER;
    let ready: boolean;
    try {
      ready = this.stream.write(data);
    } catch (err) {
      return this.failed(err);
    }
    if (ready) return HANDED_OVER;
    return new Promise<void>((resolve, reject) => {
      this.waiters.add((err) => (err ? reject(err) : resolve()));
    });
  }

  /** Ends the stream after pending writes; resolves when it finished, closed or failed. */
  end(): Promise<void> {
    this.flush();
    if (this.closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => resolve();
      this.stream.once('finish', done);
      this.stream.once('close', done);
      this.stream.once('error', done);
      this.stream.end();
    });
  }

  private failed(err: unknown): Promise<void> {
    const error = err instanceof Error ? err : new Error(String(err));
    this.fail(error);
    return isPeerGone(error) ? Promise.resolve() : Promise.reject(error);
  }

  private fail(err: Error): void {
    if (isPeerGone(err)) {
      if (!this.gone) {
        this.gone = true;
        this.hooks.onGone(err);
      }
      this.wake();
    } else {
      this.hooks.onError(err);
      this.wake(err);
    }
  }

  private wake(err?: Error): void {
    if (this.waiters.size === 0) return;
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const waiter of waiters) waiter(err);
  }
}

/**
 * A stdio transport's send: one TAP message as a line through `writer`, or nothing when there is
 * none (the stream is gone). A text holding a line feed is refused with a rejected promise,
 * never a throw (spec: bindings-stdio#framing).
 */
export function sendLine(writer: StreamWriter | undefined, text: string): Promise<void> {
  try {
    checkOneLine(text);
  } catch (err) {
    return Promise.reject(err);
  }
  return writer?.write(text + '\n') ?? HANDED_OVER;
}
