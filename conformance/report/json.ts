/** The JSON report: the report value with object keys sorted, so equal runs give equal bytes. */
import type { Report } from './model.ts';

/** Returns a copy of `value` whose object keys are sorted by UTF-16 code units, recursively. */
export function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  const obj = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(obj).sort()) if (obj[k] !== undefined) out[k] = sortKeys(obj[k]);
  return out;
}

/** The report as canonical, indented JSON text ending in a newline. */
export function renderJson(report: Report): string {
  return JSON.stringify(sortKeys(report), null, 2) + '\n';
}
