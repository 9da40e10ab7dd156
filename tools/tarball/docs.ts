/**
 * The documents of the installed package, checked as a user meets them: every link of the
 * README resolves to a file of the package or to a file of the repository (by its URL), or goes
 * to a well-known site; every spec link of a tap-conform report leads to a page and id of the
 * spec site the package ships; and the names the README says to import are exported.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { idsOf, linksOf } from '../site/check-links.ts';

/** Sites a README may link to besides the repository: the standards and tools it names. */
export const WELL_KNOWN_HOSTS = [
  'nodejs.org',
  'www.npmjs.com',
  'docs.npmjs.com',
  'json-schema.org',
  'www.rfc-editor.org',
  'datatracker.ietf.org',
  'www.asyncapi.com',
  'docs.github.com',
  'nats.io',
  'docs.nats.io',
];

/** Markdown without its fenced code blocks and code spans, where brackets are not links. */
function withoutCode(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/(`+)[\s\S]*?\1/g, '');
}

/** The link targets of a Markdown text outside code: inline links and images, reference definitions, and HTML href and src. */
export function markdownLinks(text: string): string[] {
  const prose = withoutCode(text);
  return [
    ...[...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!),
    ...[...prose.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]!),
    ...[...prose.matchAll(/\s(?:href|src)="([^"]+)"/g)].map((m) => m[1]!),
  ];
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
export function headingSlug(title: string): string {
  return title
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a Markdown text: each heading's slug and explicit `{#id}`s. */
export function markdownAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  for (const m of withoutCode(text).matchAll(/^#{1,6}\s+(.*?)\s*$/gm)) {
    const explicit = /\{#([\w.-]+)\}\s*$/.exec(m[1]!);
    if (explicit) anchors.add(explicit[1]!);
    anchors.add(headingSlug(m[1]!.replace(/\{#[\w.-]+\}\s*$/, '')));
  }
  return anchors;
}

/** Whether `fragment` names a place in the file at `path` (Markdown headings, HTML ids; other files have none to check). */
function hasAnchor(path: string, fragment: string): boolean {
  if (path.endsWith('.md')) return markdownAnchors(readFileSync(path, 'utf8')).has(fragment);
  if (path.endsWith('.html')) return idsOf(readFileSync(path, 'utf8')).has(fragment);
  return true;
}

/** Whether git tracks `path` in `root` (so it is on the repository's site); a folder counts when it holds a tracked file. */
function tracked(root: string, path: string): boolean {
  const r = spawnSync('git', ['ls-files', '--', path], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) return existsSync(join(root, path)); // not a git checkout: what is there is what ships
  return r.stdout.trim() !== '';
}

export interface DocLinkRules {
  /** The installed package's folder: relative links must resolve inside it. */
  pkg: string;
  /** The repository's web address, e.g. https://github.com/tap-protocol/tap (no trailing slash). */
  repoUrl: string;
  /** The repository's checkout, to check that `<repoUrl>/blob|tree/<branch>/<path>` names a tracked file or folder. */
  repoRoot: string;
}

/** The web address of the repository named by package.json's `repository` ({ url: 'git+https://…/x.git' } or a string). */
export function repositoryUrl(repository: unknown): string | undefined {
  const url = typeof repository === 'string' ? repository : (repository as { url?: unknown } | undefined)?.url;
  if (typeof url !== 'string') return undefined;
  return url.replace(/^git\+/, '').replace(/\.git$/, '');
}

/** What is wrong with each link of the Markdown file `file`, one line each; empty when every link resolves. */
export function brokenDocLinks(file: string, rules: DocLinkRules): string[] {
  const text = readFileSync(file, 'utf8');
  const where = relative(rules.pkg, file);
  const broken: string[] = [];
  for (const link of markdownLinks(text)) {
    const hash = link.indexOf('#');
    const target = hash === -1 ? link : link.slice(0, hash);
    const fragment = hash === -1 ? '' : decodeURIComponent(link.slice(hash + 1));
    if (target === '') {
      if (!markdownAnchors(text).has(fragment)) broken.push(`${where}: ${link} — no heading of ${where} has this anchor`);
      continue;
    }
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
      if (target === rules.repoUrl || target.startsWith(`${rules.repoUrl}/`)) {
        const path = new RegExp(`^${rules.repoUrl.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/(blob|tree)/[^/]+/(.+)$`).exec(target);
        if (!path) continue; // the repository's home, issues, releases
        const [, kind, inRepo] = path as unknown as [string, 'blob' | 'tree', string];
        const local = join(rules.repoRoot, decodeURIComponent(inRepo));
        if (!existsSync(local) || !tracked(rules.repoRoot, inRepo))
          broken.push(`${where}: ${link} — ${inRepo} is not a file of the repository (not tracked by git in ${rules.repoRoot})`);
        else if ((kind === 'tree') !== statSync(local).isDirectory())
          broken.push(
            `${where}: ${link} — ${inRepo} is a ${kind === 'tree' ? 'file: link it with /blob/' : 'folder: link it with /tree/'}`,
          );
        else if (fragment && !hasAnchor(local, fragment)) broken.push(`${where}: ${link} — ${inRepo} has no anchor "${fragment}"`);
        continue;
      }
      let host = '';
      try {
        host = new URL(target).host;
      } catch {}
      if (!/^https?:$/.test(target.slice(0, target.indexOf(':') + 1)) || !WELL_KNOWN_HOSTS.includes(host))
        broken.push(`${where}: ${link} — neither the repository (${rules.repoUrl}) nor a well-known site (WELL_KNOWN_HOSTS)`);
      continue;
    }
    const local = resolve(dirname(file), decodeURIComponent(target));
    if (local !== rules.pkg && !local.startsWith(rules.pkg + sep)) {
      broken.push(`${where}: ${link} — leads outside the package`);
      continue;
    }
    if (!existsSync(local)) {
      broken.push(
        `${where}: ${link} — the package has no ${relative(rules.pkg, local)} (ship it in package.json "files", or link the repository's copy)`,
      );
      continue;
    }
    if (fragment && statSync(local).isFile() && !hasAnchor(local, fragment))
      broken.push(`${where}: ${link} — ${relative(rules.pkg, local)} has no anchor "${fragment}"`);
  }
  return broken;
}

/**
 * The relative links of a report (HTML or Markdown) at `file`, each checked to lead to a file and,
 * with a #fragment, an id of it; external and in-page links are left out.
 */
export function reportLinks(file: string): { links: string[]; broken: string[] } {
  const text = readFileSync(file, 'utf8');
  const hrefs = file.endsWith('.html') ? linksOf(text).map((l) => l.value) : markdownLinks(text);
  const links = hrefs.filter((h) => !h.startsWith('#') && !/^[a-z][a-z0-9+.-]*:/i.test(h));
  const broken: string[] = [];
  for (const link of links) {
    const hash = link.indexOf('#');
    const local = resolve(dirname(file), decodeURIComponent(hash === -1 ? link : link.slice(0, hash)));
    const fragment = hash === -1 ? '' : decodeURIComponent(link.slice(hash + 1));
    if (!existsSync(local)) broken.push(`${link} — no file ${local}`);
    else if (fragment && !hasAnchor(local, fragment)) broken.push(`${link} — ${local} has no id "${fragment}"`);
  }
  return { links, broken };
}

/** The names the README imports from the package: `import { a, b } from 'tap-agent-protocol/x'` in its code, and "`a(…)` from `tap-agent-protocol/x`" in its prose. */
export function readmeImports(text: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const add = (module: string, name: string) => out.set(module, (out.get(module) ?? new Set()).add(name));
  for (const m of text.matchAll(/import\s*\{([^}]*)\}\s*from\s*['"](tap-agent-protocol(?:\/[\w.-]+)*)['"]/g))
    for (const part of m[1]!.split(',')) {
      const name = part.trim();
      if (name && !name.startsWith('type ')) add(m[2]!, name.split(/\s+as\s+/)[0]!);
    }
  for (const m of text.matchAll(/`([A-Za-z_$][\w$]*)(?:\([^`]*\))?`\s+from\s+`(tap-agent-protocol(?:\/[\w.-]+)*)`/g)) add(m[2]!, m[1]!);
  return out;
}
