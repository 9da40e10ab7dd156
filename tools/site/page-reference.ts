/**
 * The reference pages built from the data tables and the requirement index: shared schemas,
 * error codes, task states (with the SVG diagram), the requirement index with its links to the
 * conformance cases, and the list of cases.
 */
import { schemaAnchor, type SiteContext } from './context.ts';
import { conditionalRules, constraintsOf, fieldRows, fieldTable, literalsOf } from './fields.ts';
import { esc, rel, sinceNote, sinceTag } from './html.ts';
import type { Page } from './layout.ts';
import { coverage } from './requirement-links.ts';
import { stateDiagramSvg } from './state-diagram.ts';

function heading(level: 2 | 3, id: string, html: string): string {
  return `<h${level} id="${esc(id)}">${html}<a class="anchor" href="#${esc(id)}" aria-label="Link to this section">#</a></h${level}>`;
}

/** schemas/index.html: every schema that is not a message or a payload. */
export function schemasPage(ctx: SiteContext): Page {
  const path = 'schemas/index.html';
  const fctx = ctx.fieldContext(path);
  const order = ['envelope.schema.json', ...ctx.shared.filter((f) => f !== 'envelope.schema.json')];
  const sections = order.map((file) => {
    const s = ctx.sources.schemas.get(file)!;
    const anchor = schemaAnchor(file);
    const title = String(s.title ?? anchor);
    const isObject = s.type === 'object' && (s.properties || s.allOf);
    const lits = literalsOf(s);
    const body = isObject
      ? fieldTable(fieldRows(s, fctx))
      : `<dl class="facts"><dt>Type</dt><dd>${esc(String(s.type ?? 'any'))}${lits ? `: ${lits.map((l) => `<code>${esc(JSON.stringify(l))}</code>`).join(' | ')}` : ''}</dd>${constraintsOf(s).length ? `<dt>Constraints</dt><dd>${constraintsOf(s).join('<br>')}</dd>` : ''}</dl>`;
    const rules = conditionalRules(s);
    ctx.search.push({ t: title, u: `${path}#${anchor}`, k: 'Schema', x: `${file} ${String(s.description ?? '')}` });
    return `<section>${heading(2, anchor, esc(title))}
<p>${esc(String(s.description ?? ''))} <span class="muted">Schema: <a href="${esc(rel(path, `schemas/v1/${file}`))}"><code>${esc(file)}</code></a></span></p>
${body}${rules.length ? `<ul class="rules">${rules.map((r) => `<li>${r}</li>`).join('')}</ul>` : ''}</section>`;
  });
  const files = [...ctx.sources.schemas.keys()].map((f) => `<a href="${esc(rel(path, `schemas/v1/${f}`))}"><code>${esc(f)}</code></a>`);
  const body = `<h1 id="schemas">Schemas</h1>
<p class="lead">The JSON Schemas (2020-12) of TAP, which every version shares (what a later version adds is marked <code>"since"</code>), that are not a single message: the envelope and the shared types the messages refer to. Each message type and its payload have their own page in the <a href="${esc(rel(path, 'messages/index.html'))}">message catalogue</a>.</p>
<p>All files use relative <code>$ref</code>s and the <code>$id</code> base <code>https://schemas.tap-protocol.org/v1/</code>; this site serves each one at the path of its <code>$id</code> (<code>v1/&lt;file&gt;</code>). <a href="${esc(rel(path, 'schemas/v1/bundle.json'))}"><code>bundle.json</code></a> holds them all in one document for tools that open a single file offline; <code>schemas/README.md</code> in the repository gives the options for Ajv (<code>discriminator: true</code>), @cfworker/json-schema and python-jsonschema. <a href="${esc(rel(path, 'types.html'))}">Generated types</a> shows how to turn them into types for your language.</p>
${sections.join('\n')}
${heading(2, 'files', 'All schema files')}
<p>${files.join(' · ')}</p>`;
  return {
    path,
    title: 'Schemas',
    body,
    wide: true,
    toc: order.map((f) => ({ anchor: schemaAnchor(f), title: String(ctx.sources.schemas.get(f)!.title ?? f) })),
    description: 'The shared JSON Schemas of TAP.',
  };
}

/** errors.html: the registry of error-codes.json. */
export function errorsPage(ctx: SiteContext): Page {
  const path = 'errors.html';
  const fatal: Record<string, string> = { always: 'always: the sender ends the session', never: 'never', may: 'may be, per case' };
  const categories = [...new Set(ctx.sources.errors.map((e) => e.category))];
  const rows = ctx.sources.errors
    .map((e) => {
      ctx.search.push({ t: e.code, u: `${path}#${e.code}`, k: 'Error code', x: e.meaning });
      return `<tr id="${esc(e.code)}"${e.since ? ` data-since="${esc(e.since)}"` : ''}><td><a href="#${esc(e.code)}"><code>${esc(e.code)}</code></a>${sinceTag(e.since)}</td><td>${esc(e.category)}</td><td>${e.retryable ? '<span class="tag">retryable</span>' : '<span class="tag no">no</span>'}</td><td>${esc(fatal[e.fatal] ?? e.fatal)}</td><td>${esc(e.meaning)}</td></tr>`;
    })
    .join('\n');
  const body = `<h1 id="errors">Error codes</h1>
<p class="lead">The ${ctx.sources.errors.length} error codes of ${esc(ctx.label)}, from the normative registry <a href="${esc(rel(path, 'schemas/v1/error-codes.json'))}"><code>error-codes.json</code></a>.${sinceNote(ctx.sources.errors, 'code')} The <a href="${esc(rel(path, 'spec/errors.html'))}">Errors</a> chapter says when each is sent and in which <a href="${esc(rel(path, 'spec/errors.html#order-of-checks'))}">order the checks run</a>; the payload is <a href="${esc(rel(path, 'schemas/index.html#error-payload'))}">ErrorPayload</a>.</p>
<p class="muted">Categories: ${categories.map((c) => `<code>${esc(c)}</code>`).join(', ')}. <em>Retryable</em> is the default of the payload's <code>retryable</code>; <em>fatal</em> says whether the sender ends the session after sending it.</p>
<div class="table-wrap"><table>
<thead><tr><th>Code</th><th>Category</th><th>Retryable</th><th>Fatal</th><th>Meaning</th></tr></thead>
<tbody>
${rows}
</tbody></table></div>`;
  ctx.search.push({ t: 'Error codes', u: path, k: 'Reference', x: 'The error registry: code, category, retryable, fatal, meaning.' });
  return { path, title: 'Error codes', body, wide: true, description: `The ${ctx.label} error registry.` };
}

/** states.html: the diagram and the transition table of task-states.json. */
export function statesPage(ctx: SiteContext): { page: Page; svg: string } {
  const path = 'states.html';
  const table = ctx.sources.states;
  const svg = stateDiagramSvg(table);
  const stateLink = (s: string) => `<a href="#state-${esc(s)}"><code>${esc(s)}</code></a>`;
  const rows = table.transitions
    .map(
      (t, i) =>
        `<tr id="transition-${i + 1}"><td class="stat">${i + 1}</td><td>${stateLink(t.from)}</td><td>${stateLink(t.to)}${table.terminal.includes(t.to) ? ' <span class="tag no">terminal</span>' : ''}</td><td>${esc(t.trigger)}</td></tr>`,
    )
    .join('\n');
  const body = `<h1 id="task-states">Task states</h1>
<p class="lead">Every task is in one of ${table.states.length} states. It starts in <code>${esc(table.initial)}</code> and ends in one of the terminal states ${table.terminal.map((s) => `<code>${esc(s)}</code>`).join(', ')}. Drawn from the normative table <a href="${esc(rel(path, 'schemas/v1/task-states.json'))}"><code>task-states.json</code></a>; the <a href="${esc(rel(path, 'spec/tasks.html#states'))}">Tasks</a> chapter gives the rules.</p>
<figure class="diagram" id="diagram">
${svg}
<figcaption class="muted">Boxes are states; double boxes are terminal. Each arrow is a transition, numbered as in the table below; hover an arrow for its trigger. <a href="${esc(rel(path, 'assets/task-states.svg'))}">SVG file</a></figcaption>
</figure>
${heading(2, 'transitions', 'Transitions')}
<div class="table-wrap"><table>
<thead><tr><th>#</th><th>From</th><th>To</th><th>Trigger</th></tr></thead>
<tbody>
${rows}
</tbody></table></div>`;
  ctx.search.push({
    t: 'Task states',
    u: path,
    k: 'Reference',
    x: `State diagram and transitions: ${table.states.join(', ')}. ${table.transitions.map((t) => t.trigger).join('. ')}`,
  });
  return { page: { path, title: 'Task states', body, wide: true, description: `The ${ctx.label} task state machine.` }, svg };
}

/** requirements.html: every requirement with its level, quote, place in the spec and cases. */
export function requirementsPage(ctx: SiteContext): Page {
  const path = ctx.requirementsPath();
  const version = ctx.edition.version;
  const cov = coverage(ctx.sources.requirements, ctx.links);
  const caseLink = (id: string) => `<a class="case-link" href="${esc(rel(path, `cases.html#${id}`))}"><code>${esc(id)}</code></a>`;
  const errata = (id: string) =>
    (ctx.errataByRequirement.get(id) ?? []).map((e) => ` · erratum <a href="${esc(rel(path, `errata.html#${e}`))}">${esc(e)}</a>`).join('');
  const chapters = ctx.sources.chapters.filter((c) => ctx.sources.requirements.some((r) => r.chapter === c.name));
  const sections = chapters.map((c) => {
    const reqs = ctx.sources.requirements.filter((r) => r.chapter === c.name);
    const rows = reqs
      .map((r) => {
        if (ctx.edition.current) ctx.search.push({ t: r.id, u: ctx.requirementSentence(r.id), k: `${r.level} requirement`, x: r.text });
        const checked = ctx.links.checkedBy.get(r.id) ?? [];
        const section = ctx.links.bySection.get(r.anchor) ?? [];
        const cases = checked.length
          ? checked.map((k) => caseLink(k.id)).join('<br>')
          : section.length
            ? `<span class="muted">none names it; cases of its section:</span><br>${section.map((k) => caseLink(k.id)).join('<br>')}`
            : '<span class="muted">—</span>';
        return (
          `<tr id="${esc(r.id)}" data-level="${r.level}" data-checked="${checked.length > 0}"${r.since ? ` data-since="${esc(r.since)}"` : ''}><td><a class="req-id req-${r.level.toLowerCase()}" href="${esc(rel(path, ctx.requirementSentence(r.id)))}" title="The sentence in its chapter">${esc(r.id)}</a>${sinceTag(r.since)}</td>` +
          `<td><span class="level level-${r.level.toLowerCase()}">${r.level}</span></td>` +
          `<td>${esc(r.text)}<div class="muted"><a href="${esc(rel(path, ctx.anchorPath(r.anchor)))}"><code>${esc(r.anchor)}</code></a>${errata(r.id)}</div></td><td>${cases}</td></tr>`
        );
      })
      .join('\n');
    return `<section class="req-chapter">${heading(2, `chapter-${c.name}`, `${esc(c.label)} <span class="muted stat">(${reqs.length})</span>`)}
<div class="table-wrap"><table class="requirements">
<thead><tr><th>Id</th><th>Level</th><th>Requirement</th><th>Checked by</th></tr></thead>
<tbody>
${rows}
</tbody></table></div></section>`;
  });
  const stat = (l: 'MUST' | 'SHOULD' | 'MAY') =>
    `<span class="level level-${l.toLowerCase()}">${l}</span> ${cov[l].total} <span class="muted">(${cov[l].checked} with a case)</span>`;
  // A case of a later version names ids an older index lacks: only the current index reports them.
  const unknown =
    ctx.edition.current && ctx.links.unknown.length
      ? `<p class="note">Cases that name ids not in this index: ${ctx.links.unknown.map((u) => `<code>${esc(u.caseId)}</code> → <code>${esc(u.requirement)}</code>`).join(', ')}.</p>`
      : '';
  const added = ctx.sources.requirements.filter((r) => r.since === version).length;
  const sources = ctx.sources.editions
    .slice(ctx.sources.editions.indexOf(ctx.edition))
    .reverse()
    .map((e) => `<a href="${esc(rel(path, ctx.requirementsJsonPath(e.version)))}"><code>requirements.json</code> of ${esc(e.version)}</a>`)
    .join(' and ');
  const changes = ctx.sources.chapters.find((c) => c.name === 'changes');
  const addedNote = added
    ? ` ${added} of them are added by ${esc(version)}, marked <span class="tag since">since ${esc(version)}</span>; the others hold as they did before, with the same ids and sentences${changes ? ` (<a href="${esc(rel(path, ctx.chapterPath(changes.name)))}">${esc(changes.title)}</a>)` : ''}.`
    : '';
  const body = `<h1 id="requirements">Requirement index</h1>
<p class="lead">All ${ctx.sources.requirements.length} requirements of ${esc(ctx.label)}, from <a href="${esc(rel(path, `${ctx.chapterPath('conventions')}#requirement-ids`))}">the ids</a> in the chapters (${sources}).${addedNote} Each id links to its sentence in the spec; <em>Checked by</em> lists the <a href="${esc(rel(path, 'cases.html'))}"><code>tap-conform</code> cases</a> that name it.</p>
<p>${stat('MUST')} · ${stat('SHOULD')} · ${stat('MAY')}</p>
${unknown}
<div class="filters" role="group" aria-label="Filter">
  <span class="muted">Show:</span>
  <button type="button" data-filter="all" aria-pressed="true">all</button>
  <button type="button" data-filter="MUST" aria-pressed="false">MUST</button>
  <button type="button" data-filter="SHOULD" aria-pressed="false">SHOULD</button>
  <button type="button" data-filter="MAY" aria-pressed="false">MAY</button>
  <button type="button" data-filter="unchecked" aria-pressed="false">without a case</button>
</div>
${sections.join('\n')}`;
  const script = `(function () {
  var buttons = document.querySelectorAll('[data-filter]');
  buttons.forEach(function (b) {
    b.addEventListener('click', function () {
      var f = b.getAttribute('data-filter');
      buttons.forEach(function (o) { o.setAttribute('aria-pressed', String(o === b)); });
      document.querySelectorAll('section.req-chapter').forEach(function (section) {
        var shown = 0;
        section.querySelectorAll('tbody tr').forEach(function (tr) {
          var show = f === 'all' || tr.getAttribute('data-level') === f || (f === 'unchecked' && tr.getAttribute('data-checked') === 'false');
          tr.hidden = !show;
          if (show) shown++;
        });
        section.hidden = shown === 0;
      });
    });
  });
})();
`;
  if (ctx.edition.current)
    ctx.search.push({
      t: 'Requirement index',
      u: path,
      k: 'Reference',
      x: 'Every requirement with its level, sentence, anchor and conformance cases.',
    });
  return {
    path,
    title: `Requirement index of ${ctx.label}`,
    body,
    wide: true,
    script,
    toc: chapters.map((c) => ({ anchor: `chapter-${c.name}`, title: c.label })),
    description: `Every ${ctx.label} requirement, linked to its conformance cases.`,
  };
}

/** cases.html: the conformance cases of tap-conform by profile. */
export function casesPage(ctx: SiteContext): Page {
  const path = 'cases.html';
  const cases = ctx.sources.cases;
  const profiles = [...new Set(cases.map((c) => c.profile))];
  const sections = profiles.map((p) => {
    const rows = cases
      .filter((c) => c.profile === p)
      .map((c) => {
        ctx.search.push({ t: c.id, u: `${path}#${c.id}`, k: 'Conformance case', x: c.title });
        const reqs = c.requirements.filter((id) => ctx.requirementsById.has(id));
        return (
          `<tr id="${esc(c.id)}"><td><code>${esc(c.id)}</code></td><td><span class="level level-${c.level.toLowerCase()}">${c.level}</span></td><td>${esc(c.title)}</td>` +
          `<td>${ctx.citeExists(c.spec) ? `<a href="${esc(rel(path, ctx.anchorPath(c.spec)))}"><code>${esc(c.spec)}</code></a>` : `<code>${esc(c.spec)}</code> <span class="muted">(no such section in the spec)</span>`}${reqs.length ? `<br>${reqs.map((id) => `<a href="${esc(rel(path, `requirements.html#${id}`))}">${esc(id)}</a>`).join(', ')}` : ''}</td></tr>`
        );
      })
      .join('\n');
    return `${heading(2, `profile-${p}`, `Profile <code>${esc(p)}</code>`)}
<div class="table-wrap"><table>
<thead><tr><th>Case</th><th>Level</th><th>What it checks</th><th>Spec and requirements</th></tr></thead>
<tbody>
${rows}
</tbody></table></div>`;
  });
  const body = `<h1 id="cases">Conformance cases</h1>
<p class="lead">The ${cases.length} cases of <code>tap-conform</code>, the conformance suite of TAP ${ctx.sources.editions.map((e) => esc(e.version)).join(' and ')}, grouped by profile. <a href="${esc(rel(path, 'spec/conformance.html'))}">Conformance</a> defines profiles, levels and verdicts; <a href="${esc(rel(path, 'getting-started.html#certify'))}">Getting started</a> shows how to run them against an agent.</p>
<p class="muted">The same list, with filters: <code>npx tap-conform --list</code>.</p>
${cases.length ? sections.join('\n') : '<p class="note">The case list is empty.</p>'}`;
  return {
    path,
    title: 'Conformance cases',
    body,
    wide: true,
    toc: profiles.map((p) => ({ anchor: `profile-${p}`, title: p })),
    description: 'The conformance cases of tap-conform.',
  };
}
