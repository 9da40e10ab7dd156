/**
 * The whole spec folder as the requirement index reads it: every chapter, the ids, anchors and
 * links checked across chapters, requirements.json rendered, and the code comments whose
 * citations of the spec (`spec:` followed by a chapter and an anchor) do not resolve.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Chapter, type Level, type LocatedRequirement, type Problem, parseChapter, type Requirement } from './chapter.ts';

/** The result of reading a whole spec folder. */
export interface SpecIndex {
  chapters: Map<string, Chapter>;
  requirements: Requirement[];
  problems: Problem[];
}

/** Reads every chapter in `dir`, checks ids, anchors and links across chapters, and returns the index. */
export function parseSpec(dir: string): SpecIndex {
  const chapters = new Map<string, Chapter>();
  const problems: Problem[] = [];
  const cwd = process.cwd();
  const display = (f: string) => relative(cwd, f) || f;
  for (const f of readdirSync(dir)
    .filter((n) => n.endsWith('.md'))
    .sort()) {
    const path = join(dir, f);
    const name = f.slice(0, -3);
    const parsed = parseChapter(name, readFileSync(path, 'utf8'), display(path));
    chapters.set(name, parsed.chapter);
    problems.push(...parsed.problems);
  }

  const seen = new Map<string, LocatedRequirement>();
  for (const chapter of chapters.values()) {
    for (const r of chapter.requirements) {
      const first = seen.get(r.id);
      if (first)
        problems.push({ file: r.file, line: r.line, message: `duplicate requirement id ${r.id} (first at ${first.file}:${first.line})` });
      else seen.set(r.id, r);
    }
    for (const link of chapter.links) {
      const target = link.target;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      const hash = target.indexOf('#');
      const path = hash === -1 ? target : target.slice(0, hash);
      const fragment = hash === -1 ? null : target.slice(hash + 1);
      const report = (message: string) => problems.push({ file: chapter.file, line: link.line, message });
      if (path === '') {
        if (fragment !== null && !chapter.anchors.has(fragment)) report(`link "${target}": no anchor {#${fragment}} in this chapter`);
        continue;
      }
      const resolved = resolve(dir, path);
      if (path.endsWith('.md') && dirname(resolved) === resolve(dir)) {
        const other = chapters.get(path.slice(path.lastIndexOf('/') + 1, -3));
        if (!other) report(`link "${target}": there is no chapter ${path}`);
        else if (fragment !== null && !other.anchors.has(fragment)) report(`link "${target}": ${path} has no anchor {#${fragment}}`);
        continue;
      }
      // requirements.json is this tool's own output, so a link to it is valid before it is written.
      if (!existsSync(resolved) && resolved !== join(resolve(dir), 'requirements.json'))
        report(`link "${target}": no file ${display(resolved)}`);
    }
  }

  const requirements = [...seen.values()]
    .map(({ id, level, area, chapter, anchor, text }): Requirement => ({ id, level, area, chapter, anchor, text }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  problems.sort((a, b) => (a.file === b.file ? a.line - b.line : a.file < b.file ? -1 : 1));
  return { chapters, requirements, problems };
}

/** The text of requirements.json for a list of requirements (sorted by id, 2-space JSON). */
export function renderRequirements(requirements: Requirement[]): string {
  const sorted = [...requirements].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const doc = {
    protocol: 'tap/1.0',
    description:
      'Every requirement of the TAP 1.0 specification: id, level, area, chapter, anchor and the sentence. Generated from spec/1.0/*.md by tools/requirements.ts.',
    requirements: sorted,
  };
  return `${JSON.stringify(doc, null, 2)}\n`;
}

/** Counts requirements per level and per area. */
export function tally(requirements: Requirement[]): { levels: Record<Level, number>; areas: Record<string, number> } {
  const levels: Record<Level, number> = { MUST: 0, SHOULD: 0, MAY: 0 };
  const areas: Record<string, number> = {};
  for (const r of requirements) {
    levels[r.level]++;
    areas[r.area] = (areas[r.area] ?? 0) + 1;
  }
  return { levels, areas };
}

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const SPEC_DIR = join(ROOT, 'spec', '1.0');

/** A `spec: <chapter>#<anchor>` citation in a code comment that does not resolve. */
export interface BrokenCite {
  file: string;
  line: number;
  cite: string;
}

/** The folders whose code comments cite the spec. */
export const CITING_DIRS = ['schemas/src', 'reference', 'conformance', 'tools', 'fixtures', 'test', 'bench'];

/**
 * Finds `spec: <chapter>` and `spec: <chapter>#<anchor>` citations in the comments of the
 * TypeScript and JavaScript files under `dirs`, and returns those that name no chapter or anchor.
 */
export function brokenCites(index: SpecIndex, root: string = ROOT, dirs: string[] = CITING_DIRS): BrokenCite[] {
  const broken: BrokenCite[] = [];
  const walk = (dir: string): string[] => {
    if (!existsSync(dir)) return [];
    return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
      if (e.name === 'node_modules' || e.name.startsWith('.')) return [];
      const path = join(dir, e.name);
      if (e.isDirectory()) return walk(path);
      return /\.(ts|mts|js|mjs)$/.test(e.name) ? [path] : [];
    });
  };
  for (const file of dirs.flatMap((d) => walk(join(root, d)))) {
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((text, i) => {
        const trimmed = text.trimStart();
        const slashes = text.indexOf('//');
        const comment = /^(\*|\/\*)/.test(trimmed) ? trimmed : slashes >= 0 ? text.slice(slashes) : '';
        for (const m of comment.matchAll(/\bspec:\s*([a-z0-9-]+)(?:#([a-z0-9-]+))?/g)) {
          const chapter = index.chapters.get(m[1]!);
          if (!chapter || (m[2] !== undefined && !chapter.anchors.has(m[2]))) {
            broken.push({ file: relative(root, file), line: i + 1, cite: m[2] === undefined ? m[1]! : `${m[1]}#${m[2]}` });
          }
        }
      });
  }
  return broken;
}
