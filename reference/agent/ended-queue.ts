/**
 * The terminal tasks of a task table in the order they ended (reference/agent/tasks.ts): entries
 * no longer live (a task forgotten since) are skipped and compacted away.
 */
export class EndedQueue<T> {
  private items: T[] = [];
  private head = 0;

  push(item: T): void {
    this.items.push(item);
  }

  /** The oldest entry still satisfying `live`, dropping the others; undefined when none is left. */
  peek(live: (item: T) => boolean): T | undefined {
    while (this.head < this.items.length && !live(this.items[this.head]!)) this.head++;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return this.items[this.head];
  }

  get length(): number {
    return this.items.length - this.head;
  }

  /** Drops entries no longer live once they outnumber the `kept` live ones. */
  compact(live: (item: T) => boolean, kept: number): void {
    if (this.length > 2 * kept + 64) {
      this.items = this.items.slice(this.head).filter(live);
      this.head = 0;
    }
  }
}
