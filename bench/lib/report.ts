/**
 * The result of a run as one value (rows of figures against baselines, targets, machine), and
 * its Markdown rendering. A row that could not run says so in `not_run`; nothing is invented.
 */
import type { Spread } from './stats.ts';
import type { Machine } from './machine.ts';

/** One system's figure in a row. */
export interface Figure {
  /** What produced it, e.g. "TAP (reference client + agent)" or "bare NDJSON echo". */
  name: string;
  value: Spread;
  /** Secondary figures in the same repetitions, e.g. p50_us and p99_us. */
  extra?: Record<string, Spread>;
}

/** A baseline measured in the same run, with TAP's ratio to it (TAP median ÷ baseline median). */
export interface Baseline extends Figure {
  id: string;
  ratio: number | null;
  /** Set when this baseline could not be measured: "not run: <reason>". */
  not_run?: string;
}

/** A target from the issue, judged on this run's medians. */
export interface Target {
  text: string;
  /** What was measured, in words, e.g. "TAP 2.4× MCP". */
  measured: string;
  met: boolean | null;
}

export interface Row {
  /** Stable id, e.g. "roundtrip.stdio.sequential". */
  id: string;
  /** The scenario number and name from the issue, e.g. "1. Task round trip". */
  scenario: string;
  title: string;
  unit: string;
  better: 'higher' | 'lower';
  tap: Figure | null;
  baselines: Baseline[];
  targets: Target[];
  /** How the row was measured: counts, repetitions, what exactly is compared. */
  method: string;
  /** Anything else worth keeping (per-case times, per-task bytes). */
  details?: Record<string, unknown>;
  /** Set when the row could not run: "not run: <reason>". */
  not_run?: string;
}

export interface BenchResult {
  tool: 'tap-bench';
  mode: 'full' | 'quick' | 'tiny';
  started_at: string;
  duration_ms: number;
  machine: Machine;
  rows: Row[];
}

/** A row that could not run, with the reason in one line. */
export function notRun(base: Omit<Row, 'tap' | 'baselines' | 'targets' | 'not_run'>, reason: string, targets: string[] = []): Row {
  return {
    ...base,
    tap: null,
    baselines: [],
    targets: targets.map((text) => ({ text, measured: 'not run', met: null })),
    not_run: `not run: ${reason}`,
  };
}

/**
 * The spread of a ratio, from the repetitions' extremes: TAP's lowest over the baseline's highest
 * to TAP's highest over the baseline's lowest, e.g. "0.41–0.52×".
 */
export function ratioRange(tap: Spread, baseline: Spread): string {
  const lo = tap.min / baseline.max;
  const hi = tap.max / baseline.min;
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return 'no spread';
  return `${lo.toFixed(2)}–${hi.toFixed(2)}×`;
}

/** A baseline entry with TAP's ratio to it. */
export function compare(tap: Figure | null, id: string, figure: Figure): Baseline {
  const ratio = tap && figure.value.median > 0 ? tap.value.median / figure.value.median : null;
  return { ...figure, id, ratio };
}

/** A baseline that could not be measured. */
export function missingBaseline(id: string, name: string, reason: string): Baseline {
  return { id, name, value: { median: NaN, min: NaN, max: NaN, runs: [] }, ratio: null, not_run: `not run: ${reason}` };
}

const UNIT_TEXT: Record<string, string> = {
  'calls/s': '/s',
  'events/s': 'events/s',
  'tasks/s': 'tasks/s',
  us: 'µs',
  ns: 'ns',
  s: 's',
  MB: 'MB',
};

/** How secondary figures are shown: label and unit. */
const EXTRA_LABELS: Record<string, [string, string]> = {
  p50_us: ['p50', 'µs'],
  p99_us: ['p99', 'µs'],
  case_median_ms: ['median case', 'ms'],
  case_max_ms: ['slowest case', 'ms'],
  cpu_requester_us: ['requester CPU', 'µs/task'],
  cpu_agent_us: ['agent CPU', 'µs/task'],
  cpu_both_us: ['CPU of both sides (one process)', 'µs/task'],
  cpu_agents_us: ['answering processes CPU', 'µs/task'],
  cpu_server_us: ['nats-server CPU', 'µs/task'],

  p99_ms: ['p99', 'ms'],
  messages_per_s: ['messages', 'per s'],
  p95_ms: ['P95', 'ms'],
  burst_mb: ['just after the burst', 'MB'],
  discover_ms: ['mesh.discover p50', 'ms'],
  discover_p99_ms: ['mesh.discover p99', 'ms'],
};

/** A number with thousands separators and sensible precision. */
export function num(n: number): string {
  if (!Number.isFinite(n)) return '–';
  const abs = Math.abs(n);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3;
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

function withUnit(n: number, unit: string): string {
  const u = UNIT_TEXT[unit] ?? unit;
  return u.startsWith('/') ? `${num(n)}${u}` : `${num(n)} ${u}`;
}

/** "median unit (min–max)", plus p50/p99 when the figure has them. */
export function figureText(f: Figure, unit: string): string {
  let text = `${withUnit(f.value.median, unit)}`;
  if (f.value.runs.length > 1) text += ` (${num(f.value.min)}–${num(f.value.max)})`;
  for (const [key, value] of Object.entries(f.extra ?? {})) {
    const [label, u] = EXTRA_LABELS[key] ?? [key, ''];
    text += `; ${label} ${num(value.median)}${u ? ` ${u}` : ''}`;
  }
  return text;
}

function ratioText(r: number | null): string {
  if (r === null || !Number.isFinite(r)) return '–';
  return `${r >= 10 ? r.toFixed(0) : r >= 1 ? r.toFixed(2) : r.toFixed(3)}×`;
}

/** A JSON.stringify replacer that keeps at most one decimal. */
function rounded(_key: string, value: unknown): unknown {
  return typeof value === 'number' && !Number.isInteger(value) ? Math.round(value * 10) / 10 : value;
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/** The Markdown report: machine, the table of rows, targets, and how each row was measured. */
export function renderMarkdown(result: BenchResult): string {
  const m = result.machine;
  const lines: string[] = [];
  lines.push(`# TAP benchmarks (${result.mode} run, ${result.started_at.slice(0, 10)})`, '');
  lines.push(
    `Machine: ${m.cpu} × ${m.cores} cores, ${m.memory_gib} GiB, ${m.os}; Node ${m.node}; ` +
      `load average ${m.load_before.map((l) => l.toFixed(2)).join(' / ')} at the start, ${m.load_after.map((l) => l.toFixed(2)).join(' / ')} at the end.`,
  );
  lines.push(
    `Versions: ${Object.entries(m.versions)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}. Commit ${m.commit}.`,
  );
  lines.push(
    `Run took ${(result.duration_ms / 1000).toFixed(0)} s. Figures are medians of the repetitions with (min–max); a ratio is TAP's median ÷ the baseline's.`,
    '',
  );
  lines.push('| Row | TAP | Baseline | Baseline figure | TAP ÷ baseline |', '|---|---|---|---|---|');
  let scenario = '';
  for (const row of result.rows) {
    if (row.scenario !== scenario) {
      scenario = row.scenario;
      lines.push(`| **${cell(scenario)}** | | | | |`);
    }
    const title = `${cell(row.title)} (\`${row.id}\`)`;
    if (row.not_run) {
      lines.push(`| ${title} | ${cell(row.not_run)} | | | |`);
      continue;
    }
    const tapText = row.tap ? cell(figureText(row.tap, row.unit)) : '–';
    if (row.baselines.length === 0) lines.push(`| ${title} | ${tapText} | – | – | – |`);
    row.baselines.forEach((b, i) => {
      const first = i === 0;
      const bText = b.not_run ? b.not_run : figureText(b, row.unit);
      lines.push(`| ${first ? title : ''} | ${first ? tapText : '〃'} | ${cell(b.name)} | ${cell(bText)} | ${ratioText(b.ratio)} |`);
    });
  }
  lines.push('', '## Targets', '', '| Target | Measured | Met |', '|---|---|---|');
  for (const row of result.rows) {
    for (const t of row.targets) {
      const met = t.met === null ? 'not judged' : t.met ? 'met' : 'not met';
      lines.push(`| ${cell(t.text)} (\`${row.id}\`) | ${cell(t.measured)} | ${met} |`);
    }
  }
  lines.push('', '## How each row was measured', '');
  for (const row of result.rows) lines.push(`- \`${row.id}\` (${row.unit}, ${row.better} is better): ${row.method}`);
  const detailed = result.rows.filter((r) => r.details && Object.keys(r.details).length > 0);
  if (detailed.length > 0) {
    lines.push('', '## Details', '');
    for (const row of detailed) {
      lines.push(
        `- \`${row.id}\`: ${Object.entries(row.details!)
          .map(([k, v]) => `${k} ${typeof v === 'object' ? JSON.stringify(v, rounded) : String(v)}`)
          .join('; ')}`,
      );
    }
  }
  return lines.join('\n') + '\n';
}
