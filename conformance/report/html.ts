/**
 * The HTML report: one self-contained file (inline CSS, no scripts, no external assets) that
 * opens offline. Per case that did not pass it shows the requirement, expected vs observed, the
 * replay command and the wire transcript.
 */
import { failsErratum } from '../errata.ts';
import type { WireEntry } from '../transcript.ts';
import { hintsOf } from './hints.ts';
import { CONTROL_CHARS, escapeMarkup, hexEscape } from './text.ts';
import { defaultSpecBase, specLinks, type SpecLinks } from './links.ts';
import { count, type ProfileVerdict, type Report, type ReportCase } from './model.ts';
import { verdictCounts, scopeLine } from './terminal.ts';

/** Escapes text for HTML; control characters other than tab and line feed are shown as \xNN. */
export function esc(text: string): string {
  return escapeMarkup(text)
    .replace(CONTROL_CHARS, (ch) => `<span class="ctl">${hexEscape(ch)}</span>`)
    .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
}

const CSS = `
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{background:#1f2937;color:#fff;padding:18px 28px}
header h1{margin:0 0 4px;font-size:20px}
header .level{font-size:26px;font-weight:700;margin-top:6px}
main{padding:18px 28px;max-width:1200px}
table{border-collapse:collapse;width:100%;margin:10px 0 24px;background:#fff}
th,td{border:1px solid #e5e7eb;padding:5px 8px;text-align:left;vertical-align:top}
th{background:#f3f4f6}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:#111827;color:#e5e7eb;padding:10px;overflow:auto;white-space:pre-wrap;word-break:break-all;border-radius:4px}
.v{font-weight:700;padding:1px 6px;border-radius:3px;font-size:12px;white-space:nowrap}
.v-PASS{background:#dcfce7;color:#166534}.v-NON-STRICT{background:#fef9c3;color:#854d0e}
.v-UNIMPLEMENTED,.v-SKIPPED{background:#e5e7eb;color:#374151}.v-NOT-TESTED{background:#ffedd5;color:#9a3412}
.v-FAIL{background:#fee2e2;color:#991b1b}.v-not-run{background:#f3f4f6;color:#6b7280;font-weight:400}.v-ERROR{background:#f3e8ff;color:#6b21a8}
.case{background:#fff;border:1px solid #e5e7eb;border-left:4px solid #991b1b;margin:14px 0;padding:10px 14px;border-radius:4px}
.case h3{margin:0 0 6px;font-size:15px}
.quote{border-left:3px solid #9ca3af;margin:6px 0;padding:2px 10px;color:#374151;font-style:italic}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:10px}
.grid div{background:#f9fafb;border:1px solid #e5e7eb;padding:6px 8px;border-radius:3px}
.ctl{color:#f87171}.fold summary{cursor:pointer;list-style:none}.fold summary::after{content:' [more]';color:#9ca3af}.fold[open] summary::after{content:''}
.banner{background:#fef3c7;color:#78350f;border:1px solid #f59e0b;padding:8px 12px;border-radius:4px;margin:10px 0}
.hint{background:#eff6ff;border:1px solid #93c5fd;padding:6px 10px;border-radius:4px;margin:6px 0}
.erratum{background:#fef3c7;border-left:3px solid #f59e0b;padding:2px 10px;margin:6px 0}
.out{color:#93c5fd}.in{color:#86efac}.note{color:#9ca3af}.stderr{color:#fca5a5}.flag{color:#fbbf24}
`;

function verdict(v: ProfileVerdict): string {
  return `<span class="v v-${v.replace(' ', '-')}">${v}</span>`;
}

/** Entries longer than this are folded: their start shows, the rest opens on a click. */
const FOLD_AT = 240;

function entryText(text: string): string {
  if (text.length <= FOLD_AT) return esc(text);
  return `<details class="fold"><summary>${esc(text.slice(0, FOLD_AT))}…</summary>${esc(text.slice(FOLD_AT))}</details>`;
}

function transcriptHtml(entries: readonly WireEntry[]): string {
  const arrow = { out: '→', in: '←', note: '•', stderr: '!' } as const;
  return entries
    .map((e) => {
      const flags = e.flags?.length ? ` <span class="flag">[${esc(e.flags.join('; '))}]</span>` : '';
      return `<span class="${e.dir}">${String(e.t).padStart(6)} ms #${e.conn} ${arrow[e.dir]} ${entryText(e.text)}</span>${flags}`;
    })
    .join('\n');
}

function specLink(cite: string, links: SpecLinks): string {
  return `<a href="${esc(links.anchor(cite))}"><code>${esc(cite)}</code></a>`;
}

function requirementLinks(ids: readonly string[], links: SpecLinks): string {
  return ids.map((r) => `<a href="${esc(links.requirement(r))}"><code>${esc(r)}</code></a>`).join(', ') || '—';
}

function caseBlock(c: ReportCase, links: SpecLinks): string {
  return `<section class="case" id="${esc(c.id)}">
<h3>${verdict(c.verdict)} <code>${esc(c.id)}</code> — ${esc(c.title)}</h3>
<p><b>${esc(c.level)}</b> · profile ${esc(c.profile)} · spec ${specLink(c.spec, links)} · requirement ${requirementLinks(c.requirements, links)}</p>
${c.quote ? `<p class="quote">${esc(c.quote)}</p>` : ''}
${(c.errata ?? []).map((e) => `<p class="erratum"><a href="${esc(links.erratum(e.id))}"><code>${esc(e.id)}</code></a> ${esc(failsErratum(e))}</p>`).join('\n')}
<p>${esc(c.detail)}</p>
${c.expected !== undefined || c.observed !== undefined ? `<div class="grid"><div><b>Expected</b><br>${esc(c.expected ?? '—')}</div><div><b>Observed</b><br>${esc(c.observed ?? '—')}</div></div>` : ''}
${c.violations?.length ? `<p><b>Violations</b></p><ul>${c.violations.map((v) => `<li>${esc(v)}</li>`).join('')}</ul>` : ''}
<p><b>Replay</b> <code>${esc(c.replay)}</code></p>
${c.transcript?.length ? `<details${c.verdict === 'FAIL' || c.verdict === 'ERROR' ? ' open' : ''}><summary>Wire transcript (${count(c.transcript.length, 'entry', 'entries')})</summary><pre>${transcriptHtml(c.transcript)}</pre></details>` : ''}
</section>`;
}

/** Options of the HTML report. */
export interface HtmlOptions {
  /** Where spec anchors and requirement ids link to (default: the built site, relative to `file`). */
  specBaseUrl?: string;
  /** The file the report is written to, for the default links. */
  file?: string;
}

/** The report as one HTML document. */
export function renderHtml(report: Report, o: HtmlOptions = {}): string {
  const links = specLinks(o.specBaseUrl ?? defaultSpecBase(o.file ?? 'report.html'));
  const s = report.summary;
  const problems = report.cases.filter((c) => ['FAIL', 'ERROR', 'NOT-TESTED', 'NON-STRICT'].includes(c.verdict));
  const profileRows = Object.entries(report.profiles)
    .map(([p, v]) => {
      const cs = report.cases.filter((c) => c.profile === p);
      return `<tr><td>${esc(p)}</td><td>${verdict(v)}</td><td>${v === 'not run' ? '—' : esc(verdictCounts(cs.map((c) => c.verdict)))}</td></tr>`;
    })
    .join('');
  const caseRows = report.cases
    .map(
      (c) =>
        `<tr><td>${verdict(c.verdict)}</td><td>${problems.includes(c) ? `<a href="#${esc(c.id)}"><code>${esc(c.id)}</code></a>` : `<code>${esc(c.id)}</code>`}</td><td>${esc(c.level)}</td><td>${esc(c.profile)}</td><td>${specLink(c.spec, links)}</td><td>${esc(c.title)}</td><td>${c.duration_ms} ms</td></tr>`,
    )
    .join('\n');
  const stale = report.expected_failures?.stale ?? [];
  const hints = hintsOf(report);
  const verdicts = ['PASS', 'NON-STRICT', 'UNIMPLEMENTED', 'SKIPPED', 'NOT-TESTED', 'FAIL', 'ERROR'] as const;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(`tap-conform: ${report.target} — ${report.level}`)}</title>
<style>${CSS}</style>
</head>
<body>
<header>
<h1>tap-conform ${esc(report.version)} · TAP ${esc(report.spec_version)}</h1>
<div>${esc(report.target)} over ${esc(report.bindings.join(' + '))}${report.agent?.agent_id ? ` · agent <code>${esc(report.agent.agent_id)}</code>` : ''} · seed ${report.seed} · ${esc(report.started_at)} · ${(report.duration_ms / 1000).toFixed(1)} s</div>
<div class="level">${esc(report.level)}</div>
</header>
<main>
${report.partial && report.scope ? `<p class="banner"><b>Focused run: ${report.scope.cases} of ${count(report.scope.of, 'case')} — a certification needs the whole suite.</b> Scope: ${esc(scopeLine(report.scope, false))}.</p>` : ''}
${report.not_covered?.length ? `<p>Not covered by this certification: ${esc(report.not_covered.join('; '))}.</p>` : ''}
<h2>Summary</h2>
<table><tr>${verdicts.map((v) => `<th>${verdict(v)}</th>`).join('')}<th>total</th></tr>
<tr>${verdicts.map((v) => `<td>${s[v]}</td>`).join('')}<td>${s.total}</td></tr></table>
${report.errata ? `<p class="hint"><b>Errata:</b> ${esc(report.errata.summary)} (<a href="${esc(links.errata())}">errata of 1.0</a>)</p>` : ''}
${hints.map((h) => `<p class="hint"><b>Hint:</b> ${esc(h.text)}</p>`).join('\n')}
<h2>Profiles</h2>
<table><tr><th>profile</th><th>verdict</th><th>cases</th></tr>${profileRows}</table>
${stale.length ? `<h2>Stale expected failures</h2><ul>${stale.map((e) => `<li><code>${esc(e.id)}</code>: ${esc(e.why)}</li>`).join('')}</ul>` : ''}
<h2>Cases that need attention (${problems.length})</h2>
${problems.map((c) => caseBlock(c, links)).join('\n') || '<p>None: every case that ran passed.</p>'}
<h2>All cases</h2>
<table><tr><th>verdict</th><th>id</th><th>level</th><th>profile</th><th>spec</th><th>title</th><th>time</th></tr>
${caseRows}
</table>
</main>
</body>
</html>
`;
}
