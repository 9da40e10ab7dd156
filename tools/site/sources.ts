/**
 * Everything the site is derived from, read once: the spec chapters (through the requirement
 * parser of tools/requirements.ts), the requirement index, the errata and the first text, the
 * schemas and data tables of schemas/v1, the valid fixtures, and the conformance cases. Nothing
 * here restates them.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import type { ErrataFile, Erratum } from '../../conformance/errata.ts';
import type { FirstText } from '../errata/schema.ts';
import type { Chapter, Requirement } from '../requirements/chapter.ts';
import { parseSpec } from '../requirements/spec.ts';
import type { CaseRef } from './requirement-links.ts';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The folder of the versions of the spec, one subfolder each (spec/1.0, spec/1.1, …). */
export const SPEC_ROOT = join(ROOT, 'spec');
/** TAP 1.0: its errata, first text and examples live here, and every later version keeps its requirements. */
export const SPEC_DIR = join(SPEC_ROOT, '1.0');
export const SCHEMA_DIR = join(ROOT, 'schemas', 'v1');
export const FIXTURE_DIR = join(ROOT, 'fixtures', 'messages');

/** A JSON Schema object as read from schemas/v1. */
export type Schema = Record<string, unknown>;

/** Rows of messages.json and error-codes.json, typed by the tables' source. */
import type { ErrorCodeEntry, MessageEntry } from '../../schemas/src/tables.ts';
export type { MessageEntry };
export type ErrorEntry = ErrorCodeEntry;

/** task-states.json. */
export interface StateTable {
  initial: string;
  states: string[];
  terminal: string[];
  transitions: Array<{ from: string; to: string; trigger: string }>;
}

/** A chapter as the site shows it: its file name, nav label and source. */
export interface ChapterSource {
  name: string;
  /** The label the index's chapter list gives it (or its title). */
  label: string;
  /** Whether the index's chapter list names it (a chapter it does not, such as "Changes from 1.0", stands apart). */
  listed: boolean;
  title: string;
  source: string;
  parsed: Chapter;
}

/** An AsyncAPI operation that carries a message type, as the message itself or as a reply. */
export interface AsyncApiUse {
  operation: string;
  action: string;
  title: string;
  as: 'message' | 'reply';
}

/** A valid fixture: `<type>/<scenario>.json`. */
export interface Fixture {
  type: string;
  scenario: string;
  text: string;
}

/** A requirement as the site lists it: the version that added it when that is not 1.0. */
export type SiteRequirement = Requirement & { since?: string };

/**
 * One version of the spec the site publishes: its chapters and its requirement index. The newest
 * is the current one, at the root of the site; each older one lives under `<version>/`.
 */
export interface Edition {
  version: string;
  /** The path of the version's pages from the site root: '' for the current version, else '<version>/'. */
  prefix: string;
  current: boolean;
  /** The chapters in the order of the index's chapter list; `index` first. */
  chapters: ChapterSource[];
  /** Every requirement that holds in this version, in the order the requirement parser gives them. */
  requirements: SiteRequirement[];
  /** Ids a chapter states that the version's requirements.json lacks (the index is out of date). */
  unindexed: string[];
}

export interface Sources {
  /** The chapters of the current version in the order of the index's chapter list; `index` first. */
  chapters: ChapterSource[];
  /** The requirements of the current version. */
  requirements: SiteRequirement[];
  /** Every published version, newest (the current one) first. */
  editions: Edition[];
  messages: MessageEntry[];
  errors: ErrorEntry[];
  states: StateTable;
  /** Every schema file of schemas/v1 by file name. */
  schemas: Map<string, Schema>;
  fixtures: Fixture[];
  cases: CaseRef[];
  /** Message type → the operations of asyncapi.yaml that carry it. */
  asyncapi: Map<string, AsyncApiUse[]>;
  /** The errata of 1.0, oldest first (spec/1.0/errata.json). */
  errata: Erratum[];
  /** The first text of 1.0 (spec/1.0/first-text.json). */
  firstText: FirstText;
}

function readJson<T>(path: string): T {
  return JSON.parse(readFileSync(path, 'utf8')) as T;
}

/** The chapter order: index first, then the links of its "Chapters" list, then any chapter not listed. */
function chapterOrder(indexSource: string, names: string[]): Array<{ name: string; label: string; listed: boolean }> {
  const section = /\{#chapters\}([\s\S]*?)(?:\n#{1,6} |$)/.exec(indexSource)?.[1] ?? '';
  const listed = [...section.matchAll(/\[([^\]]+)\]\(([a-z0-9-]+)\.md\)/g)].map((m) => ({ name: m[2]!, label: m[1]!, listed: true }));
  const order = [{ name: 'index', label: 'Overview', listed: true }, ...listed.filter((c) => names.includes(c.name))];
  for (const name of names) if (!order.some((c) => c.name === name)) order.push({ name, label: name, listed: false });
  return order;
}

type Ref = { $ref?: string };
interface AsyncApiOperation {
  action: string;
  title?: string;
  messages?: Ref[];
  reply?: { messages?: Ref[] };
}

/** Message type → the operations of asyncapi.yaml that send or receive it. */
export function asyncApiUses(text: string): Map<string, AsyncApiUse[]> {
  const doc = parseYaml(text) as { operations?: Record<string, AsyncApiOperation> };
  const uses = new Map<string, AsyncApiUse[]>();
  const typeOf = (r: Ref) => (r.$ref ?? '').split('/').pop() ?? '';
  for (const [operation, op] of Object.entries(doc.operations ?? {})) {
    const add = (refs: Ref[] | undefined, as: AsyncApiUse['as']) => {
      for (const r of refs ?? []) {
        const type = typeOf(r);
        uses.set(type, [...(uses.get(type) ?? []), { operation, action: op.action, title: op.title ?? operation, as }]);
      }
    };
    add(op.messages, 'message');
    add(op.reply?.messages, 'reply');
  }
  return uses;
}

/** The versions under spec/ (folders named like 1.0 that hold an index.md), oldest first. */
export function specVersions(root = SPEC_ROOT): string[] {
  const key = (v: string) => v.split('.').map(Number);
  return readdirSync(root, { withFileTypes: true })
    .filter((d) => d.isDirectory() && /^\d+\.\d+$/.test(d.name) && existsSync(join(root, d.name, 'index.md')))
    .map((d) => d.name)
    .sort((a, b) => {
      const [x, y] = [key(a), key(b)];
      return x[0]! - y[0]! || x[1]! - y[1]!;
    });
}

/**
 * Reads every version of the spec: its chapters and its requirement index. A version's index is
 * the index of the version before it with the entries of its own requirements.json (1.0's lists
 * every requirement, 1.1's those it adds, each with "since"), in the order the requirement parser gives them.
 */
export function readEditions(root = SPEC_ROOT): Edition[] {
  const versions = specVersions(root);
  if (!versions.length) throw new Error(`${root} holds no version of the spec (a folder such as 1.0 with an index.md)`);
  const editions: Edition[] = [];
  let inherited: SiteRequirement[] = [];
  for (const version of versions) {
    const dir = join(root, version);
    const spec = parseSpec(dir);
    if (spec.problems.length > 0) {
      const first = spec.problems[0]!;
      throw new Error(
        `spec/${version} has ${spec.problems.length} problem(s), first ${first.file}:${first.line}: ${first.message} (run npx tsx tools/requirements.ts${version === '1.0' ? '' : ' and npx tsx tools/spec-1-1.ts'})`,
      );
    }
    const indexSource = readFileSync(join(dir, 'index.md'), 'utf8');
    const chapters = chapterOrder(indexSource, [...spec.chapters.keys()]).map(({ name, label, listed }): ChapterSource => {
      const parsed = spec.chapters.get(name)!;
      const title = parsed.headings.find((h) => h.depth === 1)?.title ?? name;
      const source = readFileSync(join(dir, `${name}.md`), 'utf8');
      return { name, label: label === name ? title : label, listed, title, source, parsed };
    });
    const own = existsSync(join(dir, 'requirements.json'))
      ? readJson<{ requirements: SiteRequirement[] }>(join(dir, 'requirements.json')).requirements
      : [];
    const byId = new Map(inherited.map((r) => [r.id, r]));
    for (const r of own) byId.set(r.id, r);
    const order = new Map(spec.requirements.map((r, i) => [r.id, i]));
    const requirements = [...byId.values()].sort(
      (a, b) => (order.get(a.id) ?? Number.MAX_SAFE_INTEGER) - (order.get(b.id) ?? Number.MAX_SAFE_INTEGER),
    );
    const unindexed = spec.requirements.filter((r) => !byId.has(r.id)).map((r) => r.id);
    editions.push({ version, prefix: '', current: false, chapters, requirements, unindexed });
    inherited = requirements;
  }
  editions.reverse();
  return editions.map((e, i) => ({ ...e, current: i === 0, prefix: i === 0 ? '' : `${e.version}/` }));
}

/** Reads every source of the site; `cases` is passed in so that tests can give a fake list. */
export function readSources(cases: CaseRef[]): Sources {
  const editions = readEditions();
  const current = editions[0]!;

  const schemas = new Map<string, Schema>();
  for (const f of readdirSync(SCHEMA_DIR)
    .filter((n) => n.endsWith('.schema.json'))
    .sort())
    schemas.set(f, readJson<Schema>(join(SCHEMA_DIR, f)));

  const fixtures: Fixture[] = [];
  if (existsSync(FIXTURE_DIR)) {
    for (const type of readdirSync(FIXTURE_DIR, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort()) {
      for (const f of readdirSync(join(FIXTURE_DIR, type))
        .filter((n) => n.endsWith('.json'))
        .sort()) {
        fixtures.push({ type, scenario: f.slice(0, -5), text: readFileSync(join(FIXTURE_DIR, type, f), 'utf8').trimEnd() });
      }
    }
  }

  return {
    chapters: current.chapters,
    requirements: current.requirements,
    editions,
    messages: readJson<{ messages: MessageEntry[] }>(join(SCHEMA_DIR, 'messages.json')).messages,
    errors: readJson<{ codes: ErrorEntry[] }>(join(SCHEMA_DIR, 'error-codes.json')).codes,
    states: readJson<StateTable>(join(SCHEMA_DIR, 'task-states.json')),
    schemas,
    fixtures,
    cases,
    asyncapi: asyncApiUses(readFileSync(join(ROOT, 'asyncapi.yaml'), 'utf8')),
    errata: readJson<ErrataFile>(join(SPEC_DIR, 'errata.json')).errata,
    firstText: readJson<FirstText>(join(SPEC_DIR, 'first-text.json')),
  };
}

/**
 * The conformance cases of tap-conform, reduced to what the site links to. The cases import the
 * core's validation, whose compiled validators are generated (by `npm run build`, or here when a
 * fresh clone has none yet).
 */
export async function loadCases(): Promise<CaseRef[]> {
  const { ensureValidators } = await import('../emit-validators.ts');
  if (ensureValidators())
    process.stderr.write(
      'site: wrote reference/core/validators.generated.js (the conformance cases import it; npm run build writes it too)\n',
    );
  const { ALL_CASES } = await import('../../conformance/cases/index.ts');
  return ALL_CASES.map(({ id, title, level, profile, spec, requirements }) => ({
    id,
    title,
    level,
    profile,
    spec,
    requirements: [...requirements],
  }));
}
