/**
 * Everything the site is derived from, read once: the spec chapters (through the requirement
 * parser of tools/requirements.ts), the requirement index, the schemas and data tables of
 * schemas/v1, the valid fixtures, and the conformance cases. Nothing here restates them.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import type { Chapter, Requirement } from '../requirements/chapter.ts';
import { parseSpec } from '../requirements/spec.ts';
import type { CaseRef } from './requirement-links.ts';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SPEC_DIR = join(ROOT, 'spec', '1.0');
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

export interface Sources {
  /** The chapters in the order of the index's chapter list; `index` first. */
  chapters: ChapterSource[];
  requirements: Requirement[];
  messages: MessageEntry[];
  errors: ErrorEntry[];
  states: StateTable;
  /** Every schema file of schemas/v1 by file name. */
  schemas: Map<string, Schema>;
  fixtures: Fixture[];
  cases: CaseRef[];
  /** Message type → the operations of asyncapi.yaml that carry it. */
  asyncapi: Map<string, AsyncApiUse[]>;
}

function readJson<T>(path: string): T {
  return JSON.parse(readFileSync(path, 'utf8')) as T;
}

/** The chapter order: index first, then the links of its "Chapters" list, then any chapter not listed. */
function chapterOrder(indexSource: string, names: string[]): Array<{ name: string; label: string }> {
  const section = /\{#chapters\}([\s\S]*?)(?:\n#{1,6} |$)/.exec(indexSource)?.[1] ?? '';
  const listed = [...section.matchAll(/\[([^\]]+)\]\(([a-z0-9-]+)\.md\)/g)].map((m) => ({ name: m[2]!, label: m[1]! }));
  const order = [{ name: 'index', label: 'Overview' }, ...listed.filter((c) => names.includes(c.name))];
  for (const name of names) if (!order.some((c) => c.name === name)) order.push({ name, label: name });
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

/** Reads every source of the site; `cases` is passed in so that tests can give a fake list. */
export function readSources(cases: CaseRef[]): Sources {
  const index = parseSpec(SPEC_DIR);
  if (index.problems.length > 0) {
    const first = index.problems[0]!;
    throw new Error(
      `the spec has ${index.problems.length} problem(s), first ${first.file}:${first.line}: ${first.message} (run npx tsx tools/requirements.ts)`,
    );
  }
  const indexSource = readFileSync(join(SPEC_DIR, 'index.md'), 'utf8');
  const chapters = chapterOrder(indexSource, [...index.chapters.keys()]).map(({ name, label }): ChapterSource => {
    const parsed = index.chapters.get(name)!;
    const title = parsed.headings.find((h) => h.depth === 1)?.title ?? name;
    return { name, label: label === name ? title : label, title, source: readFileSync(join(SPEC_DIR, `${name}.md`), 'utf8'), parsed };
  });

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
    chapters,
    requirements: readJson<{ requirements: Requirement[] }>(join(SPEC_DIR, 'requirements.json')).requirements,
    messages: readJson<{ messages: MessageEntry[] }>(join(SCHEMA_DIR, 'messages.json')).messages,
    errors: readJson<{ codes: ErrorEntry[] }>(join(SCHEMA_DIR, 'error-codes.json')).codes,
    states: readJson<StateTable>(join(SCHEMA_DIR, 'task-states.json')),
    schemas,
    fixtures,
    cases,
    asyncapi: asyncApiUses(readFileSync(join(ROOT, 'asyncapi.yaml'), 'utf8')),
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
