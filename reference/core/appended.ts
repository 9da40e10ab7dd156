/**
 * Appends `item` to `list` and returns the list to keep: `list` itself, or a new array of one item
 * when `list` is empty. V8 gives an empty array room for seventeen items at its first push, and a
 * list that mostly stays one item long (a finished task's stream, a settled handle's log) would
 * carry that room for as long as it is kept.
 */
export function appended<T>(list: T[], item: T): T[] {
  if (list.length === 0) return [item];
  list.push(item);
  return list;
}
