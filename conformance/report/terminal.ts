/**
 * Terminal output: a live progress line (TTY only) and the summary grouped by profile, with the
 * quoted requirement, the errata of 1.0 it fails and the replay command of every case that did
 * not pass.
 */
import { failsErratum } from '../errata.ts';
import { VERDICTS, type Verdict } from '../verdict.ts';
import { hintsOf } from './hints.ts';
import { count, type Report, type ReportCase, type Scope } from './model.ts';

export type Paint = (style: 'red' | 'green' | 'yellow' | 'gray' | 'bold' | 'magenta' | 'cyan', text: string) => string;

const CODES = { red: 31, green: 32, yellow: 33, gray: 90, bold: 1, magenta: 35, cyan: 36 } as const;

/** A painter that colours with ANSI codes, or not at all. */
export function painter(color: boolean): Paint {
  return (style, text) => (color ? `\x1b[${CODES[style]}m${text}\x1b[0m` : text);
}

const STYLE: Record<Verdict | 'not run', Parameters<Paint>[0]> = {
  'not run': 'gray',
  PASS: 'green',
  'NON-STRICT': 'yellow',
  UNIMPLEMENTED: 'gray',
  SKIPPED: 'gray',
  'NOT-TESTED': 'yellow',
  FAIL: 'red',
  ERROR: 'magenta',
};

/**
 * Progress: on a TTY one live line, rewritten in place; elsewhere (a CI log, a pipe) a plain line
 * each time another tenth of the cases is done, so a long run is never silent for minutes.
 */
export function progressLine(
  stream: NodeJS.WriteStream,
  paint: Paint,
  now: () => number = Date.now,
): { update(done: number, total: number, running: string[]): void; clear(): void } {
  if (!stream.isTTY) {
    const t0 = now();
    let reported = 0;
    return {
      update(done, total) {
        const step = Math.max(1, Math.ceil(total / 10));
        if (done === reported || (done < reported + step && done < total)) return;
        reported = done;
        stream.write(`tap-conform: ${done}/${total} cases done (${Math.round((now() - t0) / 1000)} s)\n`);
      },
      clear() {},
    };
  }
  let shown = false;
  return {
    update(done, total, running) {
      const width = stream.columns ?? 80;
      const head = `[${String(done).padStart(String(total).length)}/${total}] `;
      const line = (head + running.join(' ')).slice(0, width - 1);
      stream.write(`\r\x1b[2K${paint('gray', line)}`);
      shown = true;
    },
    clear() {
      if (shown) stream.write('\r\x1b[2K');
      shown = false;
    },
  };
}

function indent(text: string, pad = '      '): string {
  return text
    .split('\n')
    .map((l) => pad + l)
    .join('\n');
}

function problem(c: ReportCase, paint: Paint): string {
  const lines = [`  ${paint(STYLE[c.verdict], c.verdict.padEnd(10))} ${paint('bold', c.id)} [${c.level}] ${c.title}`];
  lines.push(indent(c.detail));
  if (c.quote) lines.push(indent(paint('gray', `${c.requirements.join(', ')} (${c.spec}): “${c.quote}”`)));
  else lines.push(indent(paint('gray', `spec: ${c.spec}${c.requirements.length ? ` (${c.requirements.join(', ')})` : ''}`)));
  for (const e of c.errata ?? []) lines.push(indent(paint('yellow', failsErratum(e))));
  if (c.expected !== undefined) lines.push(indent(`expected: ${c.expected}`));
  if (c.observed !== undefined) lines.push(indent(`observed: ${c.observed}`));
  lines.push(indent(paint('cyan', `replay: ${c.replay}`)));
  return lines.join('\n');
}

/** Counts per verdict, in verdict order, zero counts left out: "8 PASS, 8 SKIPPED". */
export function verdictCounts(verdicts: readonly Verdict[], paint: Paint = (_s, t) => t): string {
  return VERDICTS.map((v) => [v, verdicts.filter((x) => x === v).length] as const)
    .filter(([, n]) => n > 0)
    .map(([v, n]) => paint(STYLE[v], `${n} ${v}`))
    .join(', ');
}

/** The end-of-run summary. */
export function renderSummary(report: Report, paint: Paint): string {
  const out: string[] = [];
  out.push(paint('bold', `tap-conform ${report.version} · TAP ${report.spec_version} · ${report.target} (${report.bindings.join(' + ')})`));
  const notRun: string[] = [];
  for (const profile of Object.keys(report.profiles)) {
    const cases = report.cases.filter((c) => c.profile === profile);
    const v = report.profiles[profile]!;
    if (v === 'not run') {
      notRun.push(profile);
      continue;
    }
    out.push('');
    // A profile whose cases all did not apply, some UNIMPLEMENTED, is one the agent does not offer: the
    // words the level line uses for it ("plans not offered"), while its cases keep their verdicts.
    const label = v === 'UNIMPLEMENTED' ? 'not offered' : v;
    out.push(`${paint(STYLE[v], label.padEnd(13))} ${paint('bold', profile)}  ${verdictCounts(cases.map((c) => c.verdict))}`);
    // Cases that did not apply are grouped by reason, one line each.
    const idle = new Map<string, string[]>();
    for (const c of cases) {
      if (c.verdict === 'PASS') continue;
      if (c.verdict === 'SKIPPED' || c.verdict === 'UNIMPLEMENTED') {
        const key = `${c.verdict}\t${c.detail}`;
        idle.set(key, [...(idle.get(key) ?? []), c.id]);
        continue;
      }
      out.push(problem(c, paint));
    }
    for (const [key, ids] of idle) {
      const [verdict, detail] = key.split('\t') as [string, string];
      out.push(`  ${paint('gray', `${verdict.padEnd(10)} ${detail}: ${ids.join(', ')}`)}`);
    }
  }
  if (notRun.length) out.push('', paint('gray', `${'not run'.padEnd(13)} ${notRun.join(', ')}`));
  const s = report.summary;
  out.push('');
  out.push(
    `${count(s.total, 'case')} in ${(report.duration_ms / 1000).toFixed(1)} s: ${verdictCounts(
      report.cases.map((c) => c.verdict),
      paint,
    )}`,
  );
  if (report.errata) out.push(paint('yellow', report.errata.summary));
  if (report.stopped)
    out.push(
      paint(
        'red',
        `stopped: ${report.stopped.reason}; ${count(report.stopped.cases_not_run, 'more case')} did not run. Fix this and run again.`,
      ),
    );
  for (const h of hintsOf(report)) out.push(paint('yellow', `hint: ${h.text}`));
  for (const e of report.expected_failures?.stale ?? []) out.push(paint('red', `stale expected failure ${e.id}: ${e.why}`));
  const levelStyle = report.partial ? 'yellow' : report.certified ? 'green' : 'red';
  out.push(paint('bold', paint(levelStyle, `Level: ${report.level}`)));
  if (report.partial && report.scope)
    out.push(paint('gray', `scope: ${scopeLine(report.scope)}; run without --only, --skip, --profile and --level to certify`));
  return out.join('\n');
}

/** The filters of a partial run, in one line. */
export function scopeLine(scope: Scope, withCount = true): string {
  const parts = withCount ? [`${scope.cases} of ${count(scope.of, 'case')}`] : [];
  if (scope.profiles) parts.push(`--profile ${scope.profiles.join(',')}`);
  if (scope.level) parts.push(`--level ${scope.level}`);
  if (scope.only) parts.push(`--only ${scope.only.join(',')}`);
  if (scope.skip) parts.push(`--skip ${scope.skip.join(',')}`);
  return parts.join(', ') || 'no filter';
}
