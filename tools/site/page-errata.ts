/**
 * errata.html: every normative change to TAP 1.0 since its first text, from spec/1.0/errata.json,
 * each with its requirements as it left them (and as they read before), why, and its cases.
 */
import type { Erratum } from '../../conformance/errata.ts';
import type { SiteContext } from './context.ts';
import { esc, rel } from './html.ts';
import type { Page } from './layout.ts';

function heading(level: 2 | 3, id: string, html: string): string {
  return `<h${level} id="${esc(id)}">${html}<a class="anchor" href="#${esc(id)}" aria-label="Link to this section">#</a></h${level}>`;
}

/** One requirement of an erratum: what it read before the erratum, if anything, and what after. */
interface Reading {
  id: string;
  before?: { text: string; source: string };
  after: string;
  /** A later erratum that changed it again. */
  laterBy?: string;
}

/** Each erratum's readings, following the sentences from the first text through the list. */
function readings(ctx: SiteContext): Map<string, Reading[]> {
  const current = new Map(ctx.sources.firstText.requirements.map((r) => [r.id, { text: r.text, source: 'the first text' }]));
  const out = new Map<string, Reading[]>();
  const lastReading = new Map<string, Reading>();
  for (const e of ctx.sources.errata) {
    const list = e.requirements.map((id): Reading => {
      const before = current.get(id);
      const after = e.texts[id] ?? '';
      const reading: Reading = before ? { id, before, after } : { id, after };
      const earlier = lastReading.get(id);
      if (earlier) earlier.laterBy = e.id;
      lastReading.set(id, reading);
      current.set(id, { text: after, source: `erratum ${e.id}` });
      return reading;
    });
    out.set(e.id, list);
  }
  return out;
}

function erratumSection(ctx: SiteContext, path: string, e: Erratum, list: Reading[]): string {
  const known = new Set(ctx.sources.cases.map((c) => c.id));
  const reqLink = (id: string) =>
    ctx.requirementsById.has(id)
      ? `<a class="req-id" href="${esc(rel(path, `requirements.html#${id}`))}">${esc(id)}</a>`
      : `<code>${esc(id)}</code>`;
  const rows = list
    .map((r) => {
      const before = r.before
        ? `<div class="muted">Before (${esc(r.before.source)}): ${esc(r.before.text)}</div>`
        : '<div class="muted">New in this erratum.</div>';
      const later = r.laterBy ? `<div class="muted">Changed again by <a href="#${esc(r.laterBy)}">${esc(r.laterBy)}</a>.</div>` : '';
      return `<tr><td>${reqLink(r.id)}</td><td>${esc(r.after)}${before}${later}</td></tr>`;
    })
    .join('\n');
  const cases = e.cases.length
    ? e.cases
        .map((id) =>
          known.has(id)
            ? `<a class="case-link" href="${esc(rel(path, `cases.html#${id}`))}"><code>${esc(id)}</code></a>`
            : `<code>${esc(id)}</code>`,
        )
        .join(', ')
    : '<span class="muted">none yet: no case of <code>tap-conform</code> checks these requirements</span>';
  ctx.search.push({ t: e.id, u: `${path}#${e.id}`, k: `Erratum (${e.kind})`, x: `${e.summary} ${e.why}` });
  return `<section class="erratum">${heading(2, e.id, `<code>${esc(e.id)}</code>`)}
<p class="muted">${esc(e.date)} · ${esc(e.kind)} · ${e.requirements.map(reqLink).join(', ')}</p>
<p>${esc(e.summary)}</p>
<p><strong>Why.</strong> ${esc(e.why)}</p>
<div class="table-wrap"><table class="requirements">
<thead><tr><th>Requirement</th><th>Its sentence after this erratum</th></tr></thead>
<tbody>
${rows}
</tbody></table></div>
<p><strong>Checked by</strong> ${cases}</p></section>`;
}

/** errata.html. */
export function errataPage(ctx: SiteContext): Page {
  const path = 'errata.html';
  const { errata, firstText } = ctx.sources;
  const first = new Set(firstText.requirements.map((r) => r.id));
  const ids = new Set(errata.flatMap((e) => e.requirements));
  const added = [...ids].filter((id) => !first.has(id)).length;
  const byId = readings(ctx);
  const index = errata
    .map(
      (e) =>
        `<tr><td><a href="#${esc(e.id)}"><code>${esc(e.id)}</code></a></td><td>${esc(e.date)}</td><td>${esc(e.kind)}</td><td>${esc(e.requirements.join(', '))}</td><td>${esc(e.summary)}</td></tr>`,
    )
    .join('\n');
  const body = `<h1 id="errata">Errata of TAP 1.0</h1>
<p class="lead">${errata.length} normative changes to TAP 1.0 since its first text of ${esc(firstText.date)}, oldest first: ${added} requirements added and ${ids.size - added} of the first text changed, with the protocol string still <code>tap/1.0</code>. Each erratum names its requirements, their sentences as it left them, why it was made, and the <a href="${esc(rel(path, 'cases.html'))}">conformance cases</a> that check it. The list is <a href="${esc(rel(path, 'spec/errata.json'))}"><code>errata.json</code></a>.</p>
<p>An agent certified before an erratum may fail its cases now. When a case fails, <code>tap-conform</code> names every erratum among the case's requirements (“fails erratum … of …”) in its text, Markdown, HTML and JSON reports, and its summary says how many failures fall under errata.</p>
${heading(2, 'first-text', 'The first text')}
<p>The first text of TAP 1.0 was published on ${esc(firstText.date)} (commit <code>${esc(firstText.commit.slice(0, 7))}</code>) with ${firstText.requirements.length} requirements. Their ids and sentences are kept, frozen, in <a href="${esc(rel(path, 'spec/first-text.json'))}"><code>first-text.json</code></a>. A requirement that is not there, or whose sentence reads otherwise, is an erratum's; the repository's checks fail on any that no erratum accounts for.</p>
${heading(2, 'list', 'The list')}
<div class="table-wrap"><table>
<thead><tr><th>Erratum</th><th>Date</th><th>Kind</th><th>Requirements</th><th>Summary</th></tr></thead>
<tbody>
${index}
</tbody></table></div>
${errata.map((e) => erratumSection(ctx, path, e, byId.get(e.id) ?? [])).join('\n')}`;
  ctx.search.push({ t: 'Errata of TAP 1.0', u: path, k: 'Reference', x: 'Every normative change to TAP 1.0 since its first text.' });
  return {
    path,
    title: 'Errata of TAP 1.0',
    body,
    wide: true,
    toc: [
      { anchor: 'first-text', title: 'The first text' },
      { anchor: 'list', title: 'The list' },
    ],
    description: 'Every normative change to TAP 1.0 since its first text, with why and the cases that check it.',
  };
}
