/**
 * A reader of the Prometheus text format, strict enough to test a writer by: every sample line
 * parsed with its labels unescaped, HELP and TYPE lines at most once a family and before its
 * samples, and each histogram checked (buckets cumulative, ending in +Inf equal to _count).
 */

/** One parsed sample line. */
export interface ParsedSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A family as read: its type and help when given, and its samples (a histogram's _bucket, _sum and _count among them). */
export interface ParsedFamily {
  name: string;
  type?: string;
  help?: string;
  samples: ParsedSample[];
}

/** A line of the text that does not read; `line` counts from 1. */
export class ExpositionError extends Error {
  override name = 'ExpositionError';
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`);
  }
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+(-?\d+))?$/;
const SUFFIXES = ['_bucket', '_sum', '_count'] as const;

function parseValue(text: string): number {
  if (text === '+Inf' || text === 'Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  if (text === 'NaN') return Number.NaN;
  const n = Number(text);
  if (text.trim() === '' || Number.isNaN(n)) throw new Error(`"${text}" is not a number`);
  return n;
}

/** Reads `{a="x",b="y\"z"}` into its labels. */
function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 1;
  const end = text.length - 1;
  while (i < end) {
    const m = /^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"/.exec(text.slice(i));
    if (!m) throw new Error(`a label at "${text.slice(i, i + 20)}" is not name="value"`);
    i += m[0].length;
    let value = '';
    for (;;) {
      const c = text[i];
      if (c === undefined || i >= end) throw new Error(`the value of label ${m[1]} never closes`);
      i++;
      if (c === '"') break;
      if (c !== '\\') {
        value += c;
        continue;
      }
      const e = text[i++];
      if (e === 'n') value += '\n';
      else if (e === '\\' || e === '"') value += e;
      else throw new Error(`label ${m[1]} has the escape \\${e ?? ''}, which the format does not know`);
    }
    if (m[1]! in labels) throw new Error(`label ${m[1]} is given twice`);
    labels[m[1]!] = value;
    const rest = /^\s*,?\s*/.exec(text.slice(i))!;
    i += rest[0].length;
  }
  return labels;
}

/** The family a sample belongs to: a histogram's _bucket, _sum and _count belong to the histogram. */
function familyOf(name: string, families: Map<string, ParsedFamily>): string {
  for (const s of SUFFIXES) {
    if (!name.endsWith(s)) continue;
    const base = name.slice(0, -s.length);
    const type = families.get(base)?.type;
    if (type === 'histogram' || type === 'summary') return base;
  }
  return name;
}

/** Parses a whole exposition; throws ExpositionError naming the first line that does not read. */
export function parseExposition(text: string): Map<string, ParsedFamily> {
  const families = new Map<string, ParsedFamily>();
  const family = (name: string): ParsedFamily => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { name, samples: [] }));
    return f;
  };
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  lines.forEach((raw, index) => {
    const n = index + 1;
    const line = raw.trim();
    if (line === '') return;
    try {
      const meta = /^#\s+(HELP|TYPE)\s+([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\s(.*))?$/.exec(line);
      if (meta) {
        const f = family(meta[2]!);
        if (f.samples.length) throw new Error(`${meta[1]} of ${f.name} comes after its samples`);
        if (meta[1] === 'TYPE') {
          if (f.type !== undefined) throw new Error(`a second TYPE for ${f.name}`);
          if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(meta[3] ?? ''))
            throw new Error(`unknown type "${meta[3]}"`);
          f.type = meta[3];
        } else {
          if (f.help !== undefined) throw new Error(`a second HELP for ${f.name}`);
          f.help = (meta[3] ?? '').replace(/\\(\\|n)/g, (_, c: string) => (c === 'n' ? '\n' : '\\'));
        }
        return;
      }
      if (line.startsWith('#')) return;
      const m = SAMPLE.exec(line);
      if (!m) throw new Error(`"${line.slice(0, 80)}" is not a sample line (name{labels} value)`);
      const sample = { name: m[1]!, labels: m[2] ? parseLabels(m[2]) : {}, value: parseValue(m[3]!) };
      family(familyOf(sample.name, families)).samples.push(sample);
    } catch (err) {
      throw err instanceof ExpositionError ? err : new ExpositionError(n, (err as Error).message);
    }
  });
  for (const f of families.values()) if (f.type === 'histogram') checkHistogram(f);
  return families;
}

/** A histogram's buckets per series: cumulative, ending in +Inf, whose count is _count. */
function checkHistogram(f: ParsedFamily): void {
  const series = new Map<string, { buckets: [number, number][]; count?: number }>();
  for (const s of f.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    const entry = series.get(key) ?? { buckets: [] };
    series.set(key, entry);
    if (s.name === `${f.name}_bucket`) entry.buckets.push([le === undefined ? Number.NaN : parseValue(le), s.value]);
    else if (s.name === `${f.name}_count`) entry.count = s.value;
  }
  for (const [key, s] of series) {
    const last = s.buckets.at(-1);
    if (!last || last[0] !== Number.POSITIVE_INFINITY) throw new ExpositionError(0, `histogram ${f.name} ${key} has no +Inf bucket last`);
    for (let i = 1; i < s.buckets.length; i++) {
      if (!(s.buckets[i]![0] > s.buckets[i - 1]![0]) || s.buckets[i]![1] < s.buckets[i - 1]![1])
        throw new ExpositionError(0, `histogram ${f.name} ${key}: its buckets are not ascending and cumulative`);
    }
    if (s.count !== last[1]) throw new ExpositionError(0, `histogram ${f.name} ${key}: the +Inf bucket is not its _count`);
  }
}

/** The value of the series of `name` whose labels include `labels`, summed over the matching series (0 when none). */
export function sampleValue(families: Map<string, ParsedFamily>, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const f of families.values())
    for (const s of f.samples) if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) total += s.value;
  return total;
}
