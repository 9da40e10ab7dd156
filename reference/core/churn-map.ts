/**
 * A Map for long-lived tables that add and delete an entry per task or message (a client's
 * tasks and pending requests), built so that what it forgets can be freed by V8's young-generation
 * collections.
 *
 * V8 keeps a Map in a hash table that it rebuilds as deleted entries accumulate, and each rebuild
 * leaves the old table pointing at the new one and still holding every value it had (so that
 * iterators can move on). Once a table is in the old generation (an idle spell or a full
 * collection put it there), the abandoned table keeps the next one and all its values alive
 * through every young-generation collection until the next full one; they are copied into the
 * old generation in turn and do the same to the table after them, and so on for as long as the
 * process runs. Measured over stdio with 64 tasks in flight, after one idle spell: a requester's
 * young collections found 2.3 MB alive instead of 0.7 MB and copied 1.7 MB each into the old
 * generation instead of none (bench/README.md, "The tables a client churns").
 *
 * Here the Map holds a small cell per key, and `delete` empties the cell before it removes the
 * key, so an abandoned table holds keys and empty cells, never the values; and the Map is
 * replaced by a fresh copy once it has deleted more than twice the entries it holds, which ends
 * the chain of abandoned tables. Iteration walks the entries present when it begins.
 */
/** A value's place in the table; empty once its key is deleted. */
interface Cell<V> {
  value: V | undefined;
}

/** Deletes a table may make beyond twice its size before it is copied afresh. */
const SPARE_DELETES = 64;

export class ChurnMap<K, V extends object> {
  private cells = new Map<K, Cell<V>>();
  private deletes = 0;

  get size(): number {
    return this.cells.size;
  }

  get(key: K): V | undefined {
    return this.cells.get(key)?.value;
  }

  has(key: K): boolean {
    return this.cells.has(key);
  }

  set(key: K, value: V): this {
    const cell = this.cells.get(key);
    if (cell) cell.value = value;
    else this.cells.set(key, { value });
    return this;
  }

  delete(key: K): boolean {
    const cell = this.cells.get(key);
    if (!cell) return false;
    cell.value = undefined;
    this.cells.delete(key);
    if (++this.deletes > SPARE_DELETES + 2 * this.cells.size) {
      this.deletes = 0;
      this.cells = new Map(this.cells);
    }
    return true;
  }

  /** The values, in insertion order, as they were when called. */
  values(): V[] {
    return Array.from(this.cells.values(), (cell) => cell.value as V);
  }

  /** The entries, in insertion order, as they were when called. */
  entries(): [K, V][] {
    return Array.from(this.cells, ([key, cell]) => [key, cell.value as V]);
  }
}
