/**
 * The site's link check: every internal href, src and url(#id) of every page must name a file
 * of the site and, with a #fragment, an id in that page; every entry of the search index too.
 * Assets (stylesheets, scripts, images) must be local: an external one is a failure, as the
 * site has to work offline. External links in <a> are allowed and not fetched.
 *
 *   npx tsx tools/site/check-links.ts [site-dir]
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';

export interface BrokenLink {
  /** The page (site path) the link is on. */
  page: string;
  href: string;
  reason: string;
}

export interface LinkReport {
  pages: number;
  links: number;
  broken: BrokenLink[];
}

const ENTITY: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" };

function decode(s: string): string {
  return s.replace(/&(amp|lt|gt|quot|#39);/g, (_, e: string) => ENTITY[e]!);
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
}

/** The ids of an HTML page (id="…" and name="…"). */
export function idsOf(html: string): Set<string> {
  const ids = new Set<string>();
  for (const m of html.matchAll(/\s(?:id|name)="([^"]*)"/g)) ids.add(decode(m[1]!));
  return ids;
}

/** Every (tag, attribute, value) link of a page: href, src and url(#…) references. */
export function linksOf(html: string): Array<{ tag: string; attr: string; value: string }> {
  const out: Array<{ tag: string; attr: string; value: string }> = [];
  const withoutScripts = html.replace(/(<script\b[^>]*>)[\s\S]*?<\/script>/g, '$1</script>');
  for (const tag of withoutScripts.matchAll(/<([a-zA-Z][\w-]*)\b([^>]*)>/g)) {
    for (const a of tag[2]!.matchAll(/\s(href|src)="([^"]*)"/g))
      out.push({ tag: tag[1]!.toLowerCase(), attr: a[1]!, value: decode(a[2]!) });
    for (const u of tag[2]!.matchAll(/url\((#[^)]+)\)/g)) out.push({ tag: tag[1]!.toLowerCase(), attr: 'url', value: u[1]! });
  }
  return out;
}

/** Checks every page of the site in `siteDir`. */
export function checkSite(siteDir: string): LinkReport {
  const root = resolve(siteDir);
  const files = walk(root);
  const pages = files.filter((f) => f.endsWith('.html'));
  const idCache = new Map<string, Set<string>>();
  const idsIn = (file: string) => {
    let ids = idCache.get(file);
    if (!ids) idCache.set(file, (ids = idsOf(readFileSync(file, 'utf8'))));
    return ids;
  };
  const broken: BrokenLink[] = [];
  let links = 0;

  /** Checks one internal reference from the page at `from` (an absolute path). */
  const check = (from: string, href: string, page: string) => {
    links++;
    const hash = href.indexOf('#');
    const path = (hash === -1 ? href : href.slice(0, hash)).replace(/\?.*$/, '');
    const fragment = hash === -1 ? null : decodeURIComponent(href.slice(hash + 1));
    let target = path === '' ? from : resolve(dirname(from), decodeURIComponent(path));
    if (target !== root && !target.startsWith(root + sep)) {
      broken.push({ page, href, reason: 'points outside the site' });
      return;
    }
    if (existsSync(target) && statSync(target).isDirectory()) target = join(target, 'index.html');
    if (!existsSync(target)) {
      broken.push({ page, href, reason: `no file ${relative(root, target)}` });
      return;
    }
    if (fragment !== null && fragment !== '' && target.endsWith('.html') && !idsIn(target).has(fragment)) {
      broken.push({ page, href, reason: `${relative(root, target)} has no id "${fragment}"` });
    }
  };

  for (const file of pages) {
    const page = relative(root, file).split(sep).join('/');
    for (const { tag, attr, value } of linksOf(readFileSync(file, 'utf8'))) {
      if (/^(https?:)?\/\//i.test(value)) {
        links++;
        if (tag !== 'a') broken.push({ page, href: value, reason: `an external asset (<${tag} ${attr}>); the site must work offline` });
        continue;
      }
      if (/^(mailto|data):/i.test(value)) continue;
      if (/^[a-z][a-z0-9+.-]*:/i.test(value)) {
        broken.push({ page, href: value, reason: 'an unsupported URL scheme' });
        continue;
      }
      check(file, value, page);
    }
  }

  // The search index: its URLs are site paths that the search script turns into links.
  const index = join(root, 'assets', 'search-index.json');
  if (existsSync(index)) {
    const docs = (JSON.parse(readFileSync(index, 'utf8')) as { docs: Array<{ u: string }> }).docs;
    for (const d of docs) check(join(root, 'index.html'), d.u, 'assets/search-index.json');
  } else if (pages.length > 0) {
    broken.push({ page: 'assets/search-index.json', href: '', reason: 'the search index is missing' });
  }
  return { pages: pages.length, links, broken };
}

/** The report as lines for people. */
export function formatReport(r: LinkReport): string {
  if (r.broken.length === 0) return `link check: ${r.pages} pages, ${r.links} links, none broken`;
  return [
    `link check: ${r.broken.length} broken link(s) in ${r.pages} pages:`,
    ...r.broken.map((b) => `  ${b.page}: ${b.href} — ${b.reason}`),
  ].join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const dir = process.argv[2] ?? 'site';
  if (!existsSync(join(dir, 'index.html'))) {
    process.stderr.write(`check-links: ${dir}/index.html does not exist; build the site first: npx tsx tools/site/build.ts\n`);
    process.exitCode = 2;
  } else {
    const report = checkSite(dir);
    (report.broken.length ? process.stderr : process.stdout).write(`${formatReport(report)}\n`);
    process.exitCode = report.broken.length ? 1 : 0;
  }
}
