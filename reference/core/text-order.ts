/**
 * Strings in code-unit order, as `Array.prototype.sort` orders them without a comparator: the
 * order the mesh gives agent ids and trace times, the same whatever the locale.
 */
export function textOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
