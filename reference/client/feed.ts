/** An append-only log that any number of readers iterate asynchronously, each from the start. */

/** A log of items with async iteration: readers wait for new items and stop when it ends. */
export class Feed<T> {
  /** Every item appended, in order. */
  readonly items: T[] = [];
  private readonly present = new WeakSet<object>();
  private waiters: Array<() => void> = [];
  private ended = false;
  private failure?: Error;

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
              while (i < this.items.length) {
                const item = this.items[i++]!;
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
