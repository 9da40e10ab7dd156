/**
 * A map keyed by a pair of strings, as a map of maps. A key made by joining the two strings
 * would be built, hashed and kept anew for every entry; here the outer key (a principal, say) is
 * one string shared by all its entries, and the inner key is the caller's own string, hashed once.
 */
export class PairMap<V> {
  private readonly outer = new Map<string, Map<string, V>>();
  private count = 0;

  get(a: string, b: string): V | undefined {
    return this.outer.get(a)?.get(b);
  }

  set(a: string, b: string, value: V): void {
    let inner = this.outer.get(a);
    if (!inner) this.outer.set(a, (inner = new Map()));
    const before = inner.size;
    inner.set(b, value);
    this.count += inner.size - before;
  }

  /** Removes the entry; true when there was one. */
  delete(a: string, b: string): boolean {
    const inner = this.outer.get(a);
    if (!inner?.delete(b)) return false;
    this.count--;
    if (inner.size === 0) this.outer.delete(a);
    return true;
  }

  /** Entries held, across every outer key. */
  get size(): number {
    return this.count;
  }

  /** Every value, outer key by outer key, each in the order it was set. */
  *values(): IterableIterator<V> {
    for (const inner of this.outer.values()) yield* inner.values();
  }
}
