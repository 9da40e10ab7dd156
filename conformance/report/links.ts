/**
 * Links from a report to the spec site built by tools/site (spec/<chapter>.html#<anchor>,
 * requirements.html#<id>, errata.html#<erratum>): by default to the site the package ships in site/, relative to the
 * report, or under --spec-base-url.
 */
import { existsSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SPEC_SITE_DIR } from '../../reference/package.ts';

/** Turns spec anchors and requirement ids into URLs. */
export interface SpecLinks {
  /** `handshake#versions` → the section of the spec site. */
  anchor(cite: string): string;
  /** `TAP-HS-001` → its row in the requirement index. */
  requirement(id: string): string;
  /** `E1-ver-stray-minor` → its section of the errata page. */
  erratum(id: string): string;
  /** The errata page. */
  errata(): string;
}

/** Links under `base` (a URL or a path ending in "/"; one is added when missing). */
export function specLinks(base: string): SpecLinks {
  const root = base === '' || base.endsWith('/') ? base : `${base}/`;
  return {
    anchor(cite) {
      const [chapter, fragment] = cite.split('#');
      const page = !chapter || chapter === 'index' ? 'index.html' : `spec/${chapter}.html`;
      return `${root}${page}${fragment ? `#${fragment}` : ''}`;
    },
    requirement(id) {
      return `${root}requirements.html#${id}`;
    },
    erratum(id) {
      return `${root}errata.html#${id}`;
    },
    errata() {
      return `${root}errata.html`;
    },
  };
}

/**
 * The default base for a report written to `file`: the path from its folder to the package's spec
 * site (node_modules/tap-agent-protocol/site/ in a project that installed the package), or the
 * site's file:// URL where no relative path leads there (another drive).
 */
export function defaultSpecBase(file: string): string {
  const rel = relative(dirname(resolve(file)), SPEC_SITE_DIR);
  if (isAbsolute(rel)) return `${pathToFileURL(SPEC_SITE_DIR).href}/`;
  return rel === '' ? './' : `${rel.split(sep).map(encodeURIComponent).join('/')}/`;
}

/**
 * Why the default links of a report would lead nowhere, or undefined: in a clone the site is
 * built by `npm run site`, and a report written before that links to a folder not there yet.
 */
export function missingSpecSite(site: string = SPEC_SITE_DIR): string | undefined {
  if (existsSync(join(site, 'index.html'))) return undefined;
  return `its spec links point to ${site}, where no site is built: run \`npm run site\` in ${dirname(site)}, or pass --spec-base-url <url>`;
}
