/** An append-only log that any number of readers iterate asynchronously, each from the start. */
import { appended } from '../core/appended.ts';

/** Messages a handle's log keeps at least: a long stream is read through `events`, not kept whole. */
export const HANDLE_LOG_LIMIT = 1024;

/** A log of items with async iteration: readers wait for new items and stop when it ends. */
export class Feed<T> {
  /**
   * The items appended, in order: all of them, or once more came the newest `limit` to
   * 2 × `limit`, and every item a reader that is still reading has not reached yet.
   */
  get items(): T[] {
    return this.list;
  }

  private list: T[] = [];
  /** Items forgotten from the front of `items`. */
  private dropped = 0;
  private waiters: Array<() => void> = [];
  /** Where each reader still reading stands, as an absolute index: made at the first reader. */
  private cursors?: Set<{ i: number }>;
  private ended = false;
  private failure?: Error;

  /** `limit`: how many of the newest items the log keeps at least; older ones are forgotten in batches. */
  constructor(private readonly limit = Number.POSITIVE_INFINITY) {}

  /** True once `end` or `fail` was called. */
  get closed(): boolean {
    return this.ended;
  }

  /**
   * Appends an item. An object that is already the newest item is not added again: a handle that
   * copies a stream's log and then takes the stream's last message may be given it twice.
   */
  push(item: T): void {
    if (this.ended) return;
    if (typeof item === 'object' && item !== null && this.items.length > 0 && this.items[this.items.length - 1] === item) return;
    this.list = appended(this.list, item);
    if (this.items.length > 2 * this.limit) {
      let keepFrom = this.dropped + this.items.length - this.limit;
      if (this.cursors) for (const c of this.cursors) keepFrom = Math.min(keepFrom, c.i);
      const forget = keepFrom - this.dropped;
      if (forget > this.limit) {
        this.items.splice(0, forget);
        this.dropped += forget;
      }
    }
    this.wake();
  }

  /** Ends the log: readers finish after the last item. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.wake();
  }

  /** Ends the log with an error: readers throw it after the last item. */
  fail(error: Error): void {
    if (this.ended) return;
    this.failure = error;
    this.end();
  }

  /** Iterates the items that pass `keep`, from the first, waiting for more until the log ends. */
  iterate<U extends T>(keep: (item: T) => item is U): AsyncIterable<U> {
    return {
      [Symbol.asyncIterator]: () => {
        // A new reader starts from the oldest item kept; the log keeps what it has not read yet.
        const cursor = { i: this.dropped };
        const cursors = (this.cursors ??= new Set());
        cursors.add(cursor);
        return {
          next: async (): Promise<IteratorResult<U>> => {
            for (;;) {
              while (cursor.i - this.dropped < this.items.length) {
                const item = this.items[cursor.i++ - this.dropped]!;
                if (keep(item)) return { value: item, done: false };
              }
              if (this.ended) {
                cursors.delete(cursor);
                if (this.failure) throw this.failure;
                return { value: undefined, done: true };
              }
              await new Promise<void>((resolve) => this.waiters.push(resolve));
            }
          },
          return: async (): Promise<IteratorResult<U>> => {
            cursors.delete(cursor);
            return { value: undefined, done: true };
          },
        };
      },
    };
  }

  private wake(): void {
    if (this.waiters.length === 0) return;
    for (const fn of this.waiters.splice(0)) fn();
  }
}
