/** An append-only log that any number of readers iterate asynchronously, each from the start. */

/** A log of items with async iteration: readers wait for new items and stop when it ends. */
export class Feed<T> {
  /** The items appended, in order: all of them, or the newest `limit` to 2 × `limit` once more came. */
  readonly items: T[] = [];
  /** Items forgotten from the front of `items`. */
  private dropped = 0;
  private readonly present = new WeakSet<object>();
  private waiters: Array<() => void> = [];
  private ended = false;
  private failure?: Error;

  /** `limit`: how many of the newest items the log keeps at least; older ones are forgotten in batches. */
  constructor(private readonly limit = Number.POSITIVE_INFINITY) {}

  /** True once `end` or `fail` was called. */
  get closed(): boolean {
    return this.ended;
  }

  /** Appends an item, once: an object already in the log is not added again. */
  push(item: T): void {
    if (this.ended) return;
    if (typeof item === 'object' && item !== null) {
      if (this.present.has(item)) return;
      this.present.add(item);
    }
    this.items.push(item);
    if (this.items.length > 2 * this.limit) {
      const forget = this.items.length - this.limit;
      this.items.splice(0, forget);
      this.dropped += forget;
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
        let i = 0;
        return {
          next: async (): Promise<IteratorResult<U>> => {
            for (;;) {
              // A reader that fell behind the forgotten items goes on from the oldest one kept.
              if (i < this.dropped) i = this.dropped;
              while (i - this.dropped < this.items.length) {
                const item = this.items[i++ - this.dropped]!;
                if (keep(item)) return { value: item, done: false };
              }
              if (this.ended) {
                if (this.failure) throw this.failure;
                return { value: undefined, done: true };
              }
              await new Promise<void>((resolve) => this.waiters.push(resolve));
            }
          },
        };
      },
    };
  }

  private wake(): void {
    for (const fn of this.waiters.splice(0)) fn();
  }
}
