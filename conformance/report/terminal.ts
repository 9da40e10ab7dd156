/**
 * Terminal output: a live progress line (TTY only) and the summary grouped by profile, with the
 * quoted requirement and the replay command of every case that did not pass.
 */
import type { Verdict } from '../verdict.ts';
import type { Report, ReportCase } from './model.ts';

export type Paint = (style: 'red' | 'green' | 'yellow' | 'gray' | 'bold' | 'magenta' | 'cyan', text: string) => string;

const CODES = { red: 31, green: 32, yellow: 33, gray: 90, bold: 1, magenta: 35, cyan: 36 } as const;

/** A painter that colours with ANSI codes, or not at all. */
export function painter(color: boolean): Paint {
  return (style, text) => (color ? `\x1b[${CODES[style]}m${text}\x1b[0m` : text);
}

const STYLE: Record<Verdict, Parameters<Paint>[0]> = {
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
  if (c.expected !== undefined) lines.push(indent(`expected: ${c.expected}`));
  if (c.observed !== undefined) lines.push(indent(`observed: ${c.observed}`));
  lines.push(indent(paint('cyan', `replay: ${c.replay}`)));
  return lines.join('\n');
}

/** The end-of-run summary. */
export function renderSummary(report: Report, paint: Paint): string {
  const out: string[] = [];
  out.push(paint('bold', `tap-conform ${report.version} · TAP ${report.spec_version} · ${report.target} (${report.transport})`));
  for (const profile of Object.keys(report.profiles)) {
    const cases = report.cases.filter((c) => c.profile === profile);
    if (cases.length === 0) continue;
    const passed = cases.filter((c) => c.verdict === 'PASS').length;
    const v = report.profiles[profile]!;
    out.push('');
    const skipped = cases.filter((c) => c.verdict === 'SKIPPED').length;
    const counts = `${passed}/${cases.length - skipped} passed${skipped ? `, ${skipped} skipped` : ''}`;
    out.push(`${paint(STYLE[v], v.padEnd(13))} ${paint('bold', profile)}  ${counts}`);
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
  const s = report.summary;
  out.push('');
  const counts = (['PASS', 'NON-STRICT', 'UNIMPLEMENTED', 'SKIPPED', 'NOT-TESTED', 'FAIL', 'ERROR'] as const)
    .filter((v) => s[v] > 0)
    .map((v) => paint(STYLE[v], `${s[v]} ${v}`))
    .join(', ');
  out.push(`${s.total} cases in ${(report.duration_ms / 1000).toFixed(1)} s: ${counts}`);
  for (const e of report.expected_failures?.stale ?? []) out.push(paint('red', `stale expected failure ${e.id}: ${e.why}`));
  const levelStyle = report.strict ? 'green' : report.certified ? 'green' : 'red';
  out.push(paint('bold', paint(levelStyle, `Level: ${report.level}`)));
  return out.join('\n');
}
