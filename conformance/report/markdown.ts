/**
 * The Markdown report, to paste into an issue or a pull request: the level, a summary table
 * per profile, hints, then each case that did not pass with its requirement, expected and
 * observed, and the command that replays it.
 */
import { failsErratum } from '../errata.ts';
import { hintsOf } from './hints.ts';
import { defaultSpecBase, specLinks, type SpecLinks } from './links.ts';
import { count, type Report, type ReportCase } from './model.ts';
import { scopeLine, verdictCounts } from './terminal.ts';
import { CONTROL_CHARS, hexEscape } from './text.ts';

/** Control characters (but tab and line feed) as \xNN, so that a report never carries raw control bytes. */
export function visible(text: string): string {
  return text.replace(CONTROL_CHARS, hexEscape);
}

/** Text for Markdown prose or a table cell: characters with a Markdown meaning are escaped, lines joined. */
export function md(text: string): string {
  return visible(text)
    .replace(/[\\`*_[\]<>|#]/g, (ch) => `\\${ch}`)
    .replace(/\r?\n/g, ' ');
}

/** Inline code that survives backticks in the text. */
export function code(text: string): string {
  const t = visible(text).replace(/\r?\n/g, ' ');
  const ticks = '`'.repeat(Math.max(1, ...[...t.matchAll(/`+/g)].map((m) => m[0].length + 1)));
  const pad = t.startsWith('`') || t.endsWith('`') ? ' ' : '';
  return `${ticks}${pad}${t}${pad}${ticks}`;
}

function failure(c: ReportCase, links: SpecLinks): string {
  const reqs = c.requirements.map((r) => `[${r}](${links.requirement(r)})`).join(', ');
  const lines = [
    `#### ${c.verdict} ${code(c.id)}: ${md(c.title)}`,
    '',
    `${md(c.detail)}`,
    '',
    `- **Requirement** (${c.level}): ${reqs || '—'} in [${md(c.spec)}](${links.anchor(c.spec)})${c.quote ? `: “${md(c.quote)}”` : ''}`,
  ];
  for (const e of c.errata ?? []) lines.push(`- **Erratum** [${md(e.id)}](${links.erratum(e.id)}): ${md(failsErratum(e))}`);
  if (c.expected !== undefined) lines.push(`- **Expected:** ${md(c.expected)}`);
  if (c.observed !== undefined) lines.push(`- **Observed:** ${md(c.observed)}`);
  lines.push('- **Replay:**', '', '  ```sh', `  ${visible(c.replay)}`, '  ```');
  return lines.join('\n');
}

/** Options of the Markdown report. */
export interface MarkdownOptions {
  /** Where spec anchors and requirement ids link to (default: the built site, relative to `file`). */
  specBaseUrl?: string;
  file?: string;
}

/** The report as Markdown. */
export function renderMarkdown(report: Report, o: MarkdownOptions = {}): string {
  const links = specLinks(o.specBaseUrl ?? defaultSpecBase(o.file ?? 'report.md'));
  const out: string[] = [];
  out.push(`## tap-conform: ${md(report.level)}`, '');
  out.push(
    `${code(report.target)} over ${report.bindings.join(' + ')}${report.agent?.agent_id ? `, agent ${code(report.agent.agent_id)}` : ''} · tap-conform ${report.version} · seed ${report.seed} · ${report.started_at} · ${(report.duration_ms / 1000).toFixed(1)} s`,
    '',
  );
  if (report.partial && report.scope)
    out.push(
      `> **Focused run: ${report.scope.cases} of ${count(report.scope.of, 'case')} — a certification needs the whole suite** (${md(scopeLine(report.scope, false))}).`,
      '',
    );
  if (report.not_covered?.length) out.push(`Not covered: ${md(report.not_covered.join('; '))}.`, '');
  out.push('| profile | verdict | cases |', '|---|---|---|');
  for (const [p, v] of Object.entries(report.profiles)) {
    const cases = report.cases.filter((c) => c.profile === p);
    out.push(`| ${md(p)} | ${v} | ${v === 'not run' ? '—' : verdictCounts(cases.map((c) => c.verdict))} |`);
  }
  out.push(`| **all** | | ${verdictCounts(report.cases.map((c) => c.verdict)) || 'none'} |`, '');
  if (report.errata) out.push(`> **Errata:** ${md(report.errata.summary)} ([errata of 1.0](${links.errata()}))`, '');
  for (const h of hintsOf(report)) out.push(`> **Hint:** ${md(h.text)}`, '');
  const stale = report.expected_failures?.stale ?? [];
  if (stale.length) {
    out.push(`### Stale expected failures`, '');
    for (const e of stale) out.push(`- ${code(e.id)}: ${md(e.why)}`);
    out.push('');
  }
  const problems = report.cases.filter((c) => ['FAIL', 'ERROR', 'NOT-TESTED', 'NON-STRICT'].includes(c.verdict));
  out.push(
    `### ${problems.length === 0 ? 'No case needs attention' : `${count(problems.length, 'case')} that ${problems.length === 1 ? 'needs' : 'need'} attention`}`,
    '',
  );
  for (const c of problems) out.push(failure(c, links), '');
  return `${out.join('\n').trimEnd()}\n`;
}
