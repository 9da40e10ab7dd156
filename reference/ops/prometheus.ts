/**
 * The Prometheus text exposition format, version 0.0.4: families of counters, gauges and
 * histograms rendered with their HELP and TYPE lines, escaped label values, and a histogram's
 * cumulative buckets ending in +Inf with its _sum and _count
 * (https://prometheus.io/docs/instrumenting/exposition_formats/).
 */

/** The content type of the text format. */
export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** Label names and values of one series. */
export type Labels = Readonly<Record<string, string>>;

/** One counter or gauge series. */
export interface Sample {
  labels?: Labels;
  value: number;
}

/** One histogram series: counts per upper bound (not cumulative), their sum and count. */
export interface HistogramSeries {
  labels?: Labels;
  /** The upper bounds, ascending, without +Inf. */
  bounds: readonly number[];
  /** counts[i] observations fell in (bounds[i-1], bounds[i]]; counts[bounds.length] above the last bound. */
  counts: readonly number[];
  sum: number;
  count: number;
}

/** A metric family: a name, its help, its type and its series. */
export type Family =
  | { name: string; help: string; type: 'counter' | 'gauge'; samples: readonly Sample[] }
  | { name: string; help: string; type: 'histogram'; series: readonly HistogramSeries[] };

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** A number as the format writes it: +Inf, -Inf, NaN or the shortest decimal. */
export function formatValue(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (n === Number.POSITIVE_INFINITY) return '+Inf';
  if (n === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(n);
}

/** A HELP text escaped: backslash and line feed. */
export function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** A label value escaped: backslash, double quote and line feed. */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function labelText(labels: Labels | undefined, extra?: [string, string]): string {
  const pairs = Object.entries(labels ?? {});
  if (extra) pairs.push(extra);
  if (pairs.length === 0) return '';
  for (const [name] of pairs) if (!LABEL.test(name) || name.startsWith('__')) throw new Error(`"${name}" is not a label name`);
  return `{${pairs.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(',')}}`;
}

/** Renders families in the text format; throws for a name the format does not allow. */
export function renderExposition(families: readonly Family[]): string {
  const lines: string[] = [];
  for (const f of families) {
    if (!NAME.test(f.name)) throw new Error(`"${f.name}" is not a metric name`);
    lines.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`);
    if (f.type !== 'histogram') {
      for (const s of f.samples) lines.push(`${f.name}${labelText(s.labels)} ${formatValue(s.value)}`);
      continue;
    }
    for (const h of f.series) {
      let cumulative = 0;
      h.bounds.forEach((bound, i) => {
        cumulative += h.counts[i] ?? 0;
        lines.push(`${f.name}_bucket${labelText(h.labels, ['le', formatValue(bound)])} ${cumulative}`);
      });
      lines.push(`${f.name}_bucket${labelText(h.labels, ['le', '+Inf'])} ${h.count}`);
      lines.push(`${f.name}_sum${labelText(h.labels)} ${formatValue(h.sum)}`);
      lines.push(`${f.name}_count${labelText(h.labels)} ${h.count}`);
    }
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}

/** The default bounds of a duration in seconds: 5 ms to 5 minutes. */
export const DURATION_BOUNDS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** One series of a histogram: its labels, the count in each bucket (the last beyond every bound), the sum and the count. */
export interface HistogramCounts {
  labels: Labels;
  counts: number[];
  sum: number;
  count: number;
}

/** A histogram kept per label set (the labels joined as a key). */
export class Histogram {
  private readonly series = new Map<string, HistogramCounts>();
  constructor(readonly bounds: readonly number[] = DURATION_BOUNDS) {}

  /** The series of `labels`, made empty if new; a caller observing one label set often keeps it for `observeIn`. */
  seriesOf(labels: Labels = {}): HistogramCounts {
    const key = JSON.stringify(labels);
    let s = this.series.get(key);
    if (!s) this.series.set(key, (s = { labels, counts: new Array<number>(this.bounds.length + 1).fill(0), sum: 0, count: 0 }));
    return s;
  }

  /** Counts one observation. */
  observe(value: number, labels: Labels = {}): void {
    this.observeIn(this.seriesOf(labels), value);
  }

  /** Counts one observation in a series of this histogram (from `seriesOf`). */
  observeIn(s: HistogramCounts, value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && !(value <= bounds[i]!)) i++;
    s.counts[i]!++;
    s.sum += value;
    s.count++;
  }

  /** The series as a family renders them. */
  snapshot(): HistogramSeries[] {
    return [...this.series.values()].map((s) => ({
      labels: s.labels,
      bounds: this.bounds,
      counts: [...s.counts],
      sum: s.sum,
      count: s.count,
    }));
  }
}

/** One series of a counter: its labels and its value. */
export interface CounterValue {
  labels: Labels;
  value: number;
}

/** Counters kept per label set. */
export class Counter {
  private readonly values = new Map<string, CounterValue>();

  /** The series of `labels`, made at 0 if new; a caller counting one label set often keeps it and adds to its `value`. */
  seriesOf(labels: Labels = {}): CounterValue {
    const key = JSON.stringify(labels);
    let v = this.values.get(key);
    if (!v) this.values.set(key, (v = { labels, value: 0 }));
    return v;
  }

  /** Adds `by` (default 1) to the series of `labels`. */
  inc(labels: Labels = {}, by = 1): void {
    this.seriesOf(labels).value += by;
  }

  /** The series as a family renders them. */
  samples(): Sample[] {
    return [...this.values.values()].map((v) => ({ labels: v.labels, value: v.value }));
  }
}

/** Families of the same name joined into one (their series together), so that each name is written once. */
export function mergeFamilies(families: readonly Family[]): Family[] {
  const byName = new Map<string, Family>();
  for (const f of families) {
    const seen = byName.get(f.name);
    if (!seen) byName.set(f.name, f);
    else if (seen.type !== f.type) throw new Error(`metric ${f.name} is given as a ${seen.type} and as a ${f.type}`);
    else if (seen.type === 'histogram' && f.type === 'histogram') byName.set(f.name, { ...seen, series: [...seen.series, ...f.series] });
    else if (seen.type !== 'histogram' && f.type !== 'histogram') byName.set(f.name, { ...seen, samples: [...seen.samples, ...f.samples] });
  }
  return [...byName.values()];
}
