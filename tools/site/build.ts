/**
 * Builds the TAP spec site into site/ (git-ignored; `npm pack` builds it too, and the package
 * ships it, for tap-conform's reports to link to): a static site with relative links and no
 * external assets, so it works offline, from file:// and on any static host. It publishes every
 * version under spec/ (each folder such as spec/1.0, spec/1.1): the newest is the current text at
 * the root of the site (index.html, spec/<chapter>.html, requirements.html), each older one under
 * <version>/ with its own chapters and requirement index; the message catalogue, schemas, error
 * registry, states, errata of 1.0 and cases are shared. Everything is derived from spec/ (the
 * errata of 1.0 included), schemas/v1, fixtures/messages and the tap-conform cases; the link check
 * runs last and fails the build on any broken internal link or anchor.
 *
 *   npx tsx tools/site/build.ts [--out site]
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { checkSite, formatReport, type LinkReport } from './check-links.ts';
import { type SearchDoc, SiteContext } from './context.ts';
import { renderPage, type Nav, type Page } from './layout.ts';
import { errataPage } from './page-errata.ts';
import { gettingStartedPage, typesPage } from './page-guides.ts';
import { messagePages } from './page-messages.ts';
import { casesPage, errorsPage, requirementsPage, schemasPage, statesPage } from './page-reference.ts';
import { chapterPages, homePage } from './page-spec.ts';
import type { CaseRef } from './requirement-links.ts';
import { searchIndexJson, searchIndexScript } from './search-index.ts';
import { loadCases, readSources, ROOT, SCHEMA_DIR, SPEC_DIR, SPEC_ROOT } from './sources.ts';

export const DEFAULT_OUT = join(ROOT, 'site');

const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#2456a4"/><text x="16" y="22" font-family="system-ui,sans-serif" font-size="15" font-weight="700" fill="#fff" text-anchor="middle">T</text></svg>\n`;

export interface BuildResult {
  out: string;
  pages: string[];
  report: LinkReport;
  /** Problems that do not stop the build (e.g. a case naming an unknown requirement id). */
  warnings: string[];
}

function write(out: string, path: string, text: string): void {
  const file = join(out, path);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
}

function copyDir(from: string, to: string, filter: (name: string) => boolean): void {
  if (!existsSync(from)) return;
  mkdirSync(to, { recursive: true });
  for (const f of readdirSync(from).filter(filter)) copyFileSync(join(from, f), join(to, f));
}

/**
 * Writes every file of schemas/v1 at the path of its `$id` (https://schemas.tap-protocol.org/v1/x
 * → v1/x), so that serving the site from that host answers every `$id` and relative `$ref`; the
 * data tables, which carry no `$id`, sit beside them.
 */
function publishAtIds(out: string): void {
  for (const f of readdirSync(SCHEMA_DIR).filter((n) => n.endsWith('.json'))) {
    const text = readFileSync(join(SCHEMA_DIR, f), 'utf8');
    const id = (JSON.parse(text) as { $id?: unknown }).$id;
    const path = typeof id === 'string' ? new URL(id).pathname.slice(1) : `v1/${f}`;
    if (!path.startsWith('v1/')) throw new Error(`schemas/v1/${f} has $id ${String(id)}, outside the v1/ path of the schema host`);
    write(out, path, text);
  }
}

/** The navigation of one version's pages (the shared pages take the current version's). */
function navOf(ctx: SiteContext): Nav {
  const chapters = ctx.sources.chapters.filter((c) => c.name !== 'index');
  const listed = chapters.filter((c) => c.listed);
  return {
    version: ctx.edition.version,
    home: ctx.chapterPath('index'),
    specification: ctx.chapterPath(listed[0]?.name ?? 'index'),
    requirements: ctx.requirementsPath(),
    versions: ctx.sources.editions.map((e) => ({ version: e.version, path: ctx.chapterPath('index', e.version), current: e.current })),
    start: [
      { path: ctx.chapterPath('index'), label: 'Overview' },
      // Chapters the index does not list, such as "Changes from 1.0".
      ...chapters.filter((c) => !c.listed).map((c) => ({ path: ctx.chapterPath(c.name), label: c.label })),
      { path: 'getting-started.html', label: 'Getting started' },
      { path: 'types.html', label: 'Generated types' },
    ],
    chapters: listed.map((c) => ({ path: ctx.chapterPath(c.name), label: c.label })),
    reference: [
      { path: 'messages/index.html', label: 'Message catalogue' },
      { path: 'schemas/index.html', label: 'Schemas' },
      { path: 'errors.html', label: 'Error codes' },
      { path: 'states.html', label: 'Task states' },
      { path: ctx.requirementsPath(), label: 'Requirement index' },
      { path: 'errata.html', label: 'Errata of 1.0' },
      { path: 'cases.html', label: 'Conformance cases' },
    ],
  };
}

/** Builds the site into `out`; with `cases` the conformance cases are not imported (tests use a fake list). */
export async function buildSite(options: { out?: string; cases?: CaseRef[] } = {}): Promise<BuildResult> {
  const out = resolve(options.out ?? DEFAULT_OUT);
  const sources = readSources(options.cases ?? (await loadCases()));
  const search: SearchDoc[] = [];
  const ctx = new SiteContext(sources, undefined, search);
  // An older version's chapters and requirements are not in the search: the current text states
  // every one of its requirements, with the same id and sentence.
  const older = sources.editions.filter((e) => !e.current).map((e) => new SiteContext(sources, e.version));
  const indexFiles = sources.editions
    .filter((e) => existsSync(join(SPEC_ROOT, e.version, 'requirements.json')))
    .map((e) => `spec/${e.version}/requirements.json`)
    .reverse()
    .join(' + ');
  const warnings = [
    ...ctx.links.unknown.map((u) => `case ${u.caseId} names ${u.requirement}, which is not a requirement of ${ctx.label} (${indexFiles})`),
    ...sources.cases
      .filter((c) => !ctx.citeExists(c.spec))
      .map((c) => `case ${c.id} cites ${c.spec}, which names no chapter or anchor of spec/${ctx.edition.version}`),
    ...sources.editions.flatMap((e) =>
      e.unindexed.map(
        (id) =>
          `spec/${e.version} states ${id}, which its requirement index lacks; regenerate it (npx tsx tools/requirements.ts, npx tsx tools/spec-1-1.ts)`,
      ),
    ),
  ];

  const states = statesPage(ctx);
  const shared: Page[] = [
    gettingStartedPage(ctx),
    typesPage(ctx),
    ...messagePages(ctx),
    schemasPage(ctx),
    errorsPage(ctx),
    states.page,
    errataPage(ctx),
    casesPage(ctx),
  ];
  const versionPages = (c: SiteContext): Page[] => [homePage(c), ...chapterPages(c), requirementsPage(c)];
  const rendered: Array<{ page: Page; nav: Nav }> = [
    ...[...versionPages(ctx), ...shared].map((page) => ({ page, nav: navOf(ctx) })),
    ...older.flatMap((c) => versionPages(c).map((page) => ({ page, nav: navOf(c) }))),
  ];
  const pages = rendered.map((r) => r.page);

  // Replace a previous build, but never a folder that is not one.
  if (existsSync(out)) {
    const entries = readdirSync(out);
    if (entries.length > 0 && !entries.includes('index.html')) throw new Error(`${out} is not empty and holds no site; give another --out`);
    rmSync(out, { recursive: true, force: true });
  }
  mkdirSync(out, { recursive: true });

  for (const { page, nav } of rendered) write(out, page.path, renderPage(page, nav));
  write(out, 'assets/site.css', readFileSync(new URL('./assets/site.css', import.meta.url), 'utf8'));
  write(out, 'assets/favicon.svg', FAVICON);
  write(out, 'assets/task-states.svg', `<?xml version="1.0" encoding="UTF-8"?>\n${states.svg}\n`);
  const index = searchIndexJson(search);
  write(out, 'assets/search-index.json', index);
  write(out, 'assets/search-index.js', searchIndexScript(index));
  copyDir(SCHEMA_DIR, join(out, 'schemas', 'v1'), (f) => f.endsWith('.json'));
  publishAtIds(out);
  copyDir(join(SPEC_DIR, 'examples'), join(out, 'spec', 'examples'), () => true);
  for (const f of ['requirements.json', 'errata.json', 'first-text.json']) copyFileSync(join(SPEC_DIR, f), join(out, 'spec', f));
  for (const e of sources.editions.filter((x) => x.version !== '1.0')) {
    const file = join(SPEC_ROOT, e.version, 'requirements.json');
    if (existsSync(file)) write(out, ctx.requirementsJsonPath(e.version), readFileSync(file, 'utf8'));
  }
  // The AsyncAPI document refers to ./schemas/v1/*, which sit beside it on the site as in the repository.
  copyFileSync(join(ROOT, 'asyncapi.yaml'), join(out, 'asyncapi.yaml'));
  write(out, '.nojekyll', '');

  const report = checkSite(out);
  return { out, pages: pages.map((p) => p.path), report, warnings };
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { out: { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) {
    process.stdout.write('usage: npx tsx tools/site/build.ts [--out site]\n  builds the spec site and checks its links\n');
    return 0;
  }
  const started = Date.now();
  const result = await buildSite({ out: values.out });
  for (const w of result.warnings) process.stderr.write(`site: warning: ${w}\n`);
  const report = formatReport(result.report);
  if (result.report.broken.length > 0) {
    process.stderr.write(`${report}\nsite: the build has broken links; fix their source (spec/, tools/site) and build again.\n`);
    return 1;
  }
  process.stdout.write(
    `site: ${result.pages.length} pages written to ${result.out} in ${((Date.now() - started) / 1000).toFixed(1)} s\n${report}\n`,
  );
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  try {
    process.exitCode = await main();
  } catch (err) {
    process.stderr.write(`site: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
