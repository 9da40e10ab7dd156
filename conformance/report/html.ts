/**
 * The HTML report: one self-contained file (inline CSS, no scripts, no external assets) that
 * opens offline. Per case that did not pass it shows the requirement, expected vs observed, the
 * replay command and the wire transcript.
 */
import type { WireEntry } from '../transcript.ts';
import type { Verdict } from '../verdict.ts';
import type { Report, ReportCase } from './model.ts';

/** Escapes text for HTML. */
export function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
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
.v-FAIL{background:#fee2e2;color:#991b1b}.v-ERROR{background:#f3e8ff;color:#6b21a8}
.case{background:#fff;border:1px solid #e5e7eb;border-left:4px solid #991b1b;margin:14px 0;padding:10px 14px;border-radius:4px}
.case h3{margin:0 0 6px;font-size:15px}
.quote{border-left:3px solid #9ca3af;margin:6px 0;padding:2px 10px;color:#374151;font-style:italic}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:10px}
.grid div{background:#f9fafb;border:1px solid #e5e7eb;padding:6px 8px;border-radius:3px}
.out{color:#93c5fd}.in{color:#86efac}.note{color:#9ca3af}.stderr{color:#fca5a5}.flag{color:#fbbf24}
`;

function verdict(v: Verdict): string {
  return `<span class="v v-${v}">${v}</span>`;
}

function transcriptHtml(entries: readonly WireEntry[]): string {
  const arrow = { out: '→', in: '←', note: '•', stderr: '!' } as const;
  return entries
    .map((e) => {
      const flags = e.flags?.length ? ` <span class="flag">[${esc(e.flags.join('; '))}]</span>` : '';
      return `<span class="${e.dir}">${String(e.t).padStart(6)} ms #${e.conn} ${arrow[e.dir]} ${esc(e.text)}</span>${flags}`;
    })
    .join('\n');
}

function caseBlock(c: ReportCase): string {
  return `<section class="case" id="${esc(c.id)}">
<h3>${verdict(c.verdict)} <code>${esc(c.id)}</code> — ${esc(c.title)}</h3>
<p><b>${esc(c.level)}</b> · profile ${esc(c.profile)} · spec <code>${esc(c.spec)}</code> · requirement ${c.requirements.map((r) => `<code>${esc(r)}</code>`).join(', ') || '—'}</p>
${c.quote ? `<p class="quote">${esc(c.quote)}</p>` : ''}
<p>${esc(c.detail)}</p>
${c.expected !== undefined || c.observed !== undefined ? `<div class="grid"><div><b>Expected</b><br>${esc(c.expected ?? '—')}</div><div><b>Observed</b><br>${esc(c.observed ?? '—')}</div></div>` : ''}
${c.violations?.length ? `<p><b>Violations</b></p><ul>${c.violations.map((v) => `<li>${esc(v)}</li>`).join('')}</ul>` : ''}
<p><b>Replay</b> <code>${esc(c.replay)}</code></p>
${c.transcript?.length ? `<details${c.verdict === 'FAIL' || c.verdict === 'ERROR' ? ' open' : ''}><summary>Wire transcript (${c.transcript.length} entries)</summary><pre>${transcriptHtml(c.transcript)}</pre></details>` : ''}
</section>`;
}

/** The report as one HTML document. */
export function renderHtml(report: Report): string {
  const s = report.summary;
  const problems = report.cases.filter((c) => ['FAIL', 'ERROR', 'NOT-TESTED', 'NON-STRICT'].includes(c.verdict));
  const profileRows = Object.entries(report.profiles)
    .map(([p, v]) => {
      const cs = report.cases.filter((c) => c.profile === p);
      return `<tr><td>${esc(p)}</td><td>${verdict(v)}</td><td>${cs.filter((c) => c.verdict === 'PASS').length} / ${cs.length}</td></tr>`;
    })
    .join('');
  const caseRows = report.cases
    .map(
      (c) =>
        `<tr><td>${verdict(c.verdict)}</td><td>${problems.includes(c) ? `<a href="#${esc(c.id)}"><code>${esc(c.id)}</code></a>` : `<code>${esc(c.id)}</code>`}</td><td>${esc(c.level)}</td><td>${esc(c.profile)}</td><td><code>${esc(c.spec)}</code></td><td>${esc(c.title)}</td><td>${c.duration_ms} ms</td></tr>`,
    )
    .join('\n');
  const stale = report.expected_failures?.stale ?? [];
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
<div>${esc(report.target)} over ${esc(report.transport)}${report.agent?.agent_id ? ` · agent <code>${esc(report.agent.agent_id)}</code>` : ''} · seed ${report.seed} · ${esc(report.started_at)} · ${(report.duration_ms / 1000).toFixed(1)} s</div>
<div class="level">${esc(report.level)}</div>
</header>
<main>
<h2>Summary</h2>
<table><tr>${(['PASS', 'NON-STRICT', 'UNIMPLEMENTED', 'SKIPPED', 'NOT-TESTED', 'FAIL', 'ERROR'] as const).map((v) => `<th>${verdict(v)}</th>`).join('')}<th>total</th></tr>
<tr>${(['PASS', 'NON-STRICT', 'UNIMPLEMENTED', 'SKIPPED', 'NOT-TESTED', 'FAIL', 'ERROR'] as const).map((v) => `<td>${s[v]}</td>`).join('')}<td>${s.total}</td></tr></table>
<h2>Profiles</h2>
<table><tr><th>profile</th><th>verdict</th><th>passed</th></tr>${profileRows}</table>
${stale.length ? `<h2>Stale expected failures</h2><ul>${stale.map((e) => `<li><code>${esc(e.id)}</code>: ${esc(e.why)}</li>`).join('')}</ul>` : ''}
<h2>Cases that need attention (${problems.length})</h2>
${problems.map(caseBlock).join('\n') || '<p>None: every case that ran passed.</p>'}
<h2>All cases</h2>
<table><tr><th>verdict</th><th>id</th><th>level</th><th>profile</th><th>spec</th><th>title</th><th>time</th></tr>
${caseRows}
</table>
</main>
</body>
</html>
`;
}
