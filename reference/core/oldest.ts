/**
 * The oldest key of a Map or Set, for tables that forget their oldest entries first
 * (spec: limits#bounded-tables). `map.keys().next()` walks every slot deleted since the table was
 * last rebuilt, so a table that forgets one entry per message spends time quadratic in its size;
 * one iterator kept across calls walks each slot once.
 */
export class OldestKey<K> {
  private iterator: Iterator<K> | undefined;

  constructor(private readonly table: { keys(): Iterator<K> }) {}

  /**
   * The oldest key of a table that is not empty. The caller deletes it before it asks again: every
   * key the iterator has passed is then gone, and every key added since lies ahead of it.
   */
  take(): K {
    let next = this.iterator?.next();
    if (next === undefined || next.done === true) {
      this.iterator = this.table.keys();
      next = this.iterator.next();
    }
    return next.value as K;
  }
}
