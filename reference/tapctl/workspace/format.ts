/** Small formatting helpers shared by the workspace commands. */
import type { Io } from '../registry.ts';

/** Prints a JSON document for scripts. */
export function printJson(io: Io, value: unknown): void {
  io.out(JSON.stringify(value, null, 2) + '\n');
}

/** A duration for people: "850 ms", "12 s", "4 min", "3 h". */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 120_000) return `${Math.round(ms / 100) / 10} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 3_600_000)} h`;
}

/** A JSON value on one line, cut to `max` characters with an ellipsis. */
export function excerpt(value: unknown, max = 160): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  if (text === undefined) return 'null';
  const oneLine = text.replace(/\s*\n\s*/g, ' ');
  return oneLine.length > max ? oneLine.slice(0, max - 1) + '…' : oneLine;
}

/** Left-aligned columns: each row's cells padded to the widest cell of their column. */
export function table(rows: string[][], indent = '  '): string {
  if (rows.length === 0) return '';
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => indent + r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}
