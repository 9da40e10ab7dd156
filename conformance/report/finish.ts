/**
 * The end of a run, shared by every binding: the terminal summary, the report files asked for,
 * and the exit status with its one-line reason (0 every required case passed, 1 otherwise).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Config } from '../options.ts';
import { packageVersion } from '../../reference/package.ts';
import { unexpectedFailures, type BaselineCheck } from './baseline.ts';
import { count, type Report } from './model.ts';
import { painter, renderSummary } from './terminal.ts';

/** The harness version (the package's). */
export function toolVersion(): string {
  return packageVersion();
}

export interface Finish {
  cfg: Pick<Config, 'json' | 'junit' | 'html' | 'badge' | 'color' | 'level' | 'expectedFailures'> &
    Partial<Pick<Config, 'markdown' | 'specBaseUrl'>>;
  baseline?: BaselineCheck;
  out: NodeJS.WriteStream;
  err: NodeJS.WriteStream;
  /** The error to throw when a report file cannot be written (the caller's usage error). */
  usage: (message: string) => Error;
}

/** Prints the summary, writes the report files and returns the exit status. */
export async function finishRun(report: Report, f: Finish): Promise<0 | 1> {
  const { cfg, baseline, out, err } = f;
  out.write(`${renderSummary(report, painter(cfg.color && out.isTTY === true))}\n`);
  const links = (file: string) => ({ file, specBaseUrl: cfg.specBaseUrl });
  type Render = (r: Report, file: string) => string;
  // Each writer loads only when its report is asked for.
  const files: [string | undefined, () => Promise<Render>][] = [
    [cfg.json, async () => (await import('./json.ts')).renderJson],
    [cfg.junit, async () => (await import('./junit.ts')).renderJunit],
    [
      cfg.html,
      async () => {
        const { renderHtml } = await import('./html.ts');
        return (r, file) => renderHtml(r, links(file));
      },
    ],
    [
      cfg.markdown,
      async () => {
        const { renderMarkdown } = await import('./markdown.ts');
        return (r, file) => renderMarkdown(r, links(file));
      },
    ],
    [cfg.badge, async () => (await import('./badge.ts')).renderBadge],
  ];
  for (const [file, load] of files) if (file) write(file, (await load())(report, file), f.usage);
  const linked = [cfg.html, cfg.markdown].filter((file) => file !== undefined);
  if (linked.length > 0 && cfg.specBaseUrl === undefined) {
    const { missingSpecSite } = await import('./links.ts');
    const missing = missingSpecSite();
    if (missing) err.write(`tap-conform: note: ${linked.join(' and ')}: ${missing}\n`);
  }

  if (report.stopped) {
    err.write(
      `tap-conform: ${report.level}: the run stopped after ${count(report.summary.total, 'case')} at a fault of the agent that every case would meet (see "stopped:" above) (exit 1)\n`,
    );
    return 1;
  }
  // A run certified to the first text of 1.0 names the errata it fails in its level, and passes.
  const excused = new Set(report.first_text_only ?? []);
  const failures = unexpectedFailures(report.cases, cfg.level, baseline).filter((c) => !excused.has(c.id));
  const stale = baseline?.stale ?? [];
  if (failures.length === 0 && stale.length === 0) {
    const amended =
      excused.size > 0 ? `, ${excused.size} failing only rules that errata added since the first text of 1.0` : ', none failing';
    err.write(`tap-conform: ${report.level}: ${count(report.summary.total, 'case')}${amended} (exit 0)\n`);
    return 0;
  }
  const parts: string[] = [];
  if (failures.length) parts.push(failureCounts(failures, cfg.level));
  if (stale.length)
    parts.push(
      `${stale.length} stale expected failure${stale.length > 1 ? 's' : ''} in ${cfg.expectedFailures} (${stale.map((s) => s.id).join(', ')})`,
    );
  const next = failures[0] ? `replay one with: ${failures[0].replay}` : 'remove the stale entries from the baseline';
  err.write(`tap-conform: ${parts.join('; ')}; ${next} (exit 1)\n`);
  return 1;
}

/**
 * The cases that keep the run from exiting 0, by verdict, naming the first few of each: a FAIL is
 * the agent's, an ERROR the harness's, and a NON-STRICT or NOT-TESTED case counts only because the
 * level asked for judges SHOULD cases too.
 */
export function failureCounts(failures: readonly { id: string; verdict: string; level: string }[], level: string): string {
  const byVerdict = new Map<string, string[]>();
  for (const c of failures) byVerdict.set(c.verdict, [...(byVerdict.get(c.verdict) ?? []), c.id]);
  const groups = [...byVerdict].map(([verdict, ids]) => {
    const names = `${ids.slice(0, 3).join(', ')}${ids.length > 3 ? ', …' : ''}`;
    const note = verdict === 'ERROR' ? '; harness errors, rerun with --debug' : '';
    return `${ids.length} ${verdict} (${names}${note})`;
  });
  const strictOnly = failures.filter((c) => c.verdict !== 'FAIL' && c.verdict !== 'ERROR' && c.level !== 'MUST').length;
  const strict =
    strictOnly > 0 && level !== 'must'
      ? `; ${strictOnly} of them ${strictOnly > 1 ? 'are SHOULD cases' : 'is a SHOULD case'}, counted because --level ${level} judges strictly (--level must does not)`
      : '';
  return `${failures.length} case${failures.length > 1 ? 's' : ''} did not pass: ${groups.join(', ')}${strict}`;
}

function write(file: string, text: string, usage: (message: string) => Error): void {
  try {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
  } catch (e) {
    throw usage(`could not write ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}
