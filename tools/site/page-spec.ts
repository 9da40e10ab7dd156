/** A version's home page (spec/<version>/index.md) and one page per chapter. */
import type { SiteContext } from './context.ts';
import { esc, rel } from './html.ts';
import type { Page } from './layout.ts';
import { renderMarkdown } from './markdown.ts';
import { textOf } from './search-index.ts';
import type { ChapterSource } from './sources.ts';

/** A chapter's source split into sections: heading anchor, title and the Markdown below it. */
export function chapterSections(chapter: ChapterSource): Array<{ anchor: string; title: string; depth: number; markdown: string }> {
  const lines = chapter.source.split('\n');
  const hs = chapter.parsed.headings.filter((h) => h.anchor);
  return hs.map((h, i) => ({
    anchor: h.anchor!,
    title: h.title,
    depth: h.depth,
    markdown: lines.slice(h.line, i + 1 < hs.length ? hs[i + 1]!.line - 1 : lines.length).join('\n'),
  }));
}

/** Splits rendered HTML at its h2/h3 headings and adds one search entry per section. */
function indexSections(ctx: SiteContext, path: string, label: string, html: string): void {
  const parts = html.split(/(?=<h[1-3] id=")/);
  for (const part of parts) {
    const m = /^<h([1-3]) id="([^"]+)">([\s\S]*?)<\/h\1>/.exec(part);
    if (!m) continue;
    const title = textOf(m[3]!).replace(/#$/, '').trim();
    ctx.search.push({ t: title, u: m[1] === '1' ? path : `${path}#${m[2]}`, k: label, x: textOf(part.slice(m[0].length)).slice(0, 600) });
  }
}

function requirementSummary(ctx: SiteContext, chapter: string, page: string): string {
  const reqs = ctx.sources.requirements.filter((r) => r.chapter === chapter);
  if (reqs.length === 0) return '';
  const n = (level: string) => reqs.filter((r) => r.level === level).length;
  const parts = (['MUST', 'SHOULD', 'MAY'] as const)
    .filter((l) => n(l) > 0)
    .map((l) => `<span class="level level-${l.toLowerCase()}">${n(l)} ${l}</span>`);
  const since = reqs.filter((r) => r.since === ctx.edition.version).length;
  const added = since
    ? ` · ${since} added by ${esc(ctx.edition.version)} <span class="tag since">since ${esc(ctx.edition.version)}</span>`
    : '';
  return `<p class="muted">This chapter states <a href="${esc(rel(page, `${ctx.requirementsPath()}#chapter-${chapter}`))}">${reqs.length} requirement${reqs.length === 1 ? '' : 's'}</a> ${parts.join(' ')}${added}</p>`;
}

/** Version → the site path of the same chapter in each published version that has it. */
function alternates(ctx: SiteContext, name: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of ctx.sources.editions) if (e.chapters.some((c) => c.name === name)) out[e.version] = ctx.chapterPath(name, e.version);
  return out;
}

/** On a page of an older version: which version is current, and this page there. */
function olderNote(ctx: SiteContext, path: string, name: string): string {
  const current = ctx.sources.editions[0]!;
  if (ctx.edition.current) return '';
  const there = current.chapters.some((c) => c.name === name)
    ? `<a href="${esc(rel(path, ctx.chapterPath(name, current.version)))}">this ${name === 'index' ? 'page' : 'chapter'} in TAP ${esc(current.version)}</a>`
    : `<a href="${esc(rel(path, ctx.chapterPath('index', current.version)))}">TAP ${esc(current.version)}</a>`;
  return `<p class="note version-note">You are reading ${esc(ctx.label)}, an earlier version. The current version is TAP ${esc(current.version)}: read ${there}.</p>`;
}

/** One page per chapter, with previous/next links in reading order. */
export function chapterPages(ctx: SiteContext): Page[] {
  const chapters = ctx.sources.chapters.filter((c) => c.name !== 'index');
  const listed = chapters.filter((c) => c.listed);
  const label = ctx.label;
  return chapters.map((chapter, i) => {
    const path = ctx.chapterPath(chapter.name);
    const number = listed.indexOf(chapter) + 1;
    const rendered = renderMarkdown(chapter.source, ctx.renderContext(path));
    if (ctx.edition.current) indexSections(ctx, path, chapter.label, rendered.html);
    const h1End = rendered.html.indexOf('</h1>') + '</h1>'.length;
    const prev = chapters[i - 1];
    const next = chapters[i + 1];
    const pager =
      `<nav class="pager" aria-label="Chapters">` +
      (prev ? `<a class="prev" href="${esc(rel(path, ctx.chapterPath(prev.name)))}">← ${esc(prev.label)}</a>` : '') +
      (next ? `<a class="next" href="${esc(rel(path, ctx.chapterPath(next.name)))}">${esc(next.label)} →</a>` : '') +
      `</nav>`;
    const body =
      `<div class="breadcrumb"><a href="${esc(rel(path, ctx.chapterPath('index')))}">${esc(label)}</a> / ${number ? `Chapter ${number}` : esc(chapter.label)}</div>` +
      olderNote(ctx, path, chapter.name) +
      rendered.html.slice(0, h1End) +
      requirementSummary(ctx, chapter.name, path) +
      rendered.html.slice(h1End) +
      `<hr>${pager}`;
    return {
      path,
      title: chapter.title,
      body,
      toc: rendered.headings.filter((h) => h.depth === 2).map((h) => ({ anchor: h.anchor, title: h.title })),
      description: `${label} specification, ${number ? `chapter ${number}` : 'page'}: ${chapter.title}.`,
      alternates: alternates(ctx, chapter.name),
    };
  });
}

/** The home page: the index chapter with an overview of what the site holds. */
export function homePage(ctx: SiteContext): Page {
  const index = ctx.sources.chapters.find((c) => c.name === 'index')!;
  const path = ctx.chapterPath('index');
  const rendered = renderMarkdown(index.source, ctx.renderContext(path));
  if (ctx.edition.current) indexSections(ctx, path, 'Overview', rendered.html);
  const listed = ctx.sources.chapters.filter((c) => c.listed && c.name !== 'index');
  // A chapter the version before lacks (1.1's "Changes from 1.0") gets its card, as does one the index does not list.
  const previous = ctx.sources.editions[ctx.sources.editions.indexOf(ctx.edition) + 1];
  const apart = ctx.sources.chapters.filter(
    (c) => c.name !== 'index' && (!c.listed || (previous && !previous.chapters.some((p) => p.name === c.name))),
  );
  const firstP = rendered.html.indexOf('</p>') + '</p>'.length;
  const { requirements, messages, errors, cases } = ctx.sources;
  const musts = requirements.filter((r) => r.level === 'MUST').length;
  const card = (to: string, title: string, text: string) =>
    `<a class="card" href="${esc(rel(path, to))}"><strong>${esc(title)}</strong><span>${text}</span></a>`;
  const added = requirements.filter((r) => r.since === ctx.edition.version).length;
  const cards = [
    card(
      ctx.chapterPath(listed[0]?.name ?? 'index'),
      `Read ${ctx.label}`,
      `${listed.length} chapters, every heading with a stable anchor.`,
    ),
    ...apart.map((c) =>
      card(
        ctx.chapterPath(c.name),
        c.title,
        `A chapter new in ${esc(ctx.label)}${added ? `, which adds ${added} requirements in all` : ''}.`,
      ),
    ),
    card('getting-started.html', 'Get started', 'Build an agent on the reference library and certify it with <code>tap-conform</code>.'),
    card('messages/index.html', 'Message catalogue', `${messages.length} message types: direction, replies, fields and examples.`),
    card(
      ctx.requirementsPath(),
      'Requirement index',
      `${requirements.length} requirements (${musts} MUST)${added ? `, ${added} of them since ${esc(ctx.edition.version)}` : ''}, each linked to the conformance cases that check it.`,
    ),
    card(
      'errata.html',
      'Errata of 1.0',
      `${ctx.sources.errata.length} normative changes to 1.0 since its first text, each with why and the cases that check it.`,
    ),
    card('states.html', 'Task states', 'The task state machine, drawn from <code>task-states.json</code>.'),
    card('errors.html', 'Error codes', `${errors.length} stable codes with category, retryability and fatality.`),
    card('cases.html', 'Conformance cases', `${cases.length} cases of <code>tap-conform</code>, by profile.`),
    card('types.html', 'Generated types', 'TypeScript, Python, Go and Rust types from the JSON Schemas.'),
  ].join('\n');
  const versions = ctx.sources.editions
    .map(
      (e) =>
        `<li><a href="${esc(rel(path, ctx.chapterPath('index', e.version)))}">TAP ${esc(e.version)}</a>${e.current ? ' <span class="muted">(current)</span>' : ''}${e.version === ctx.edition.version ? ' <span class="muted">· this page</span>' : ''}${e.version === '1.0' ? ` · <a href="${esc(rel(path, 'errata.html'))}">its errata</a>` : ''}</li>`,
    )
    .join('');
  const versionBox = `<section class="versions-box" aria-labelledby="versions"><h2 id="versions">Versions<a class="anchor" href="#versions" aria-label="Link to this section">#</a></h2><ul>${versions}</ul></section>`;
  const body = `${olderNote(ctx, path, 'index')}<div class="hero">${rendered.html.slice(0, firstP)}</div>\n<div class="cards">${cards}</div>\n${versionBox}\n${rendered.html.slice(firstP)}`;
  return {
    path,
    title: `${ctx.label} specification`,
    body,
    current: path,
    alternates: Object.fromEntries(ctx.sources.editions.map((e) => [e.version, ctx.chapterPath('index', e.version)])),
    toc: [
      { anchor: 'versions', title: 'Versions' },
      ...rendered.headings.filter((h) => h.depth === 2).map((h) => ({ anchor: h.anchor, title: h.title })),
    ],
    description: `${ctx.label}: the task hand-off protocol for heterogeneous LLM agents. Specification, message catalogue, requirement index and conformance.`,
  };
}
