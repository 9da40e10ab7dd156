/**
 * The page shell every site page shares: header with search, the left navigation (chapters
 * and reference pages, with the current chapter's sections), and the footer. All URLs are
 * relative, so the site works from file:// and from any static host. On a narrow screen the
 * navigation folds behind a "Contents" button naming the current page, so a page opens on its
 * content; without JavaScript it stays open above the content.
 */
import { readFileSync } from 'node:fs';
import { esc, rel, rootOf } from './html.ts';

export const SEARCH_JS = readFileSync(new URL('./assets/search.js', import.meta.url), 'utf8');
export const NAV_JS = readFileSync(new URL('./assets/nav.js', import.meta.url), 'utf8');

export interface NavItem {
  /** Site path, e.g. 'spec/tasks.html'. */
  path: string;
  label: string;
}

export interface Nav {
  /** The version of the spec these pages are of, e.g. '1.1'. */
  version: string;
  /** The site paths of that version's home page, first chapter and requirement index (for the header). */
  home: string;
  specification: string;
  requirements: string;
  /** Every published version's home page, newest first; `current` marks the newest. */
  versions: Array<{ version: string; path: string; current: boolean }>;
  start: NavItem[];
  chapters: NavItem[];
  reference: NavItem[];
}

export interface Page {
  /** Site path of the page, e.g. 'messages/task.request.html'. */
  path: string;
  title: string;
  /** HTML of the main column. */
  body: string;
  /** Sections of this page for the sidebar (depth 2 headings). */
  toc?: Array<{ anchor: string; title: string }>;
  /** Which nav entry is current (defaults to `path`). */
  current?: string;
  wide?: boolean;
  description?: string;
  /** Extra inline script for this page only. */
  script?: string;
  /** Version → the site path of this page in that version (e.g. the same chapter); the version switch goes there, else to its home page. */
  alternates?: Record<string, string>;
}

/** The version switch: one link per published version, the one shown marked current. */
function versionList(page: Page, nav: Nav): string {
  return (
    `<ol class="versions">` +
    nav.versions
      .map((v) => {
        const here = v.version === nav.version;
        const to = page.alternates?.[v.version] ?? v.path;
        return `<li><a href="${esc(rel(page.path, to))}" data-version="${esc(v.version)}"${here ? ' aria-current="true"' : ''}>TAP ${esc(v.version)}${v.current ? ' <span class="muted">(current)</span>' : ''}</a></li>`;
      })
      .join('') +
    `</ol>`
  );
}

function navList(page: Page, items: NavItem[], numbered: boolean): string {
  const current = page.current ?? page.path;
  return (
    `<ol>` +
    items
      .map((item, i) => {
        const here = item.path === current;
        const num = numbered ? `<span class="num">${i + 1}.</span>` : '';
        const toc =
          here && page.toc && page.toc.length > 0
            ? `<ul class="toc">${page.toc.map((t) => `<li><a href="#${esc(t.anchor)}">${esc(t.title)}</a></li>`).join('')}</ul>`
            : '';
        return `<li><a href="${esc(rel(page.path, item.path))}"${here ? ' aria-current="page"' : ''}>${num}${esc(item.label)}</a>${toc}</li>`;
      })
      .join('') +
    `</ol>`
  );
}

/** The complete HTML document of a page. */
export function renderPage(page: Page, nav: Nav): string {
  const root = rootOf(page.path);
  const link = (to: string) => esc(rel(page.path, to));
  const current = page.current ?? page.path;
  const here = [...nav.start, ...nav.chapters, ...nav.reference].find((item) => item.path === current)?.label ?? page.title;
  const top = (to: string, label: string) =>
    `<a href="${link(to)}"${current === to || (current.startsWith(to.replace(/index\.html$/, '')) && to !== nav.home) ? ' aria-current="true"' : ''}>${label}</a>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(page.title)} · TAP ${esc(nav.version)}</title>
<meta name="description" content="${esc(page.description ?? `TAP ${nav.version}: the task hand-off protocol for heterogeneous LLM agents.`)}">
<link rel="stylesheet" href="${root}assets/site.css">
<link rel="icon" href="${root}assets/favicon.svg" type="image/svg+xml">
<script>document.documentElement.classList.add('js');</script>
</head>
<body data-root="${root}">
<header class="site-header">
  <a class="brand" href="${link(nav.home)}"><span class="logo">TAP</span>TAP <span class="version">${esc(nav.version)}</span></a>
  <nav class="header-links" aria-label="Main">
    ${top(nav.specification, 'Specification')}
    ${top('messages/index.html', 'Messages')}
    ${top(nav.requirements, 'Requirements')}
    ${top('getting-started.html', 'Get started')}
  </nav>
  <div class="search" role="search">
    <input id="search-input" type="search" placeholder="Search the spec, messages, errors…  ( / )" aria-label="Search" autocomplete="off">
    <ul id="search-results" class="search-results" hidden></ul>
  </div>
</header>
<div class="layout">
<nav class="sidebar" aria-label="Contents">
  <button class="nav-toggle" type="button" aria-expanded="false" aria-controls="nav-lists">Contents <span class="nav-here">${esc(here)}</span></button>
  <div class="nav-lists" id="nav-lists">
  <h2>Version</h2>
  ${versionList(page, nav)}
  <h2>Start</h2>
  ${navList(page, nav.start, false)}
  <h2>Specification</h2>
  ${navList(page, nav.chapters, true)}
  <h2>Reference</h2>
  ${navList(page, nav.reference, false)}
  </div>
</nav>
<main>
<article class="content${page.wide ? ' wide' : ''}">
${page.body}
<footer class="site-footer">TAP ${esc(nav.version)} · built from <code>spec/${esc(nav.version)}</code>, <code>schemas/v1</code> and <code>fixtures/</code>. The chapters, schemas and data tables are normative; this site renders them.</footer>
</article>
</main>
</div>
<script>
${SEARCH_JS}${NAV_JS}</script>${page.script ? `\n<script>\n${page.script}</script>` : ''}
</body>
</html>
`;
}
