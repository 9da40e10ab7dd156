/**
 * Links from a report to the spec site built by tools/site (spec/<chapter>.html#<anchor>,
 * requirements.html#<id>): relative to the built site by default, or under --spec-base-url.
 */
import { dirname, relative, resolve } from 'node:path';
import { repoPath } from '../paths.ts';

/** Turns spec anchors and requirement ids into URLs. */
export interface SpecLinks {
  /** `handshake#versions` → the section of the spec site. */
  anchor(cite: string): string;
  /** `TAP-HS-001` → its row in the requirement index. */
  requirement(id: string): string;
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
  };
}

/** The default base for a report written to `file`: the path from its folder to the built site (./site). */
export function defaultSpecBase(file: string): string {
  const rel = relative(dirname(resolve(file)), repoPath('site'))
    .split('\\')
    .join('/');
  return rel === '' ? './' : `${rel}/`;
}
