/**
 * Emits the TAP JSON Schemas and data tables from the TypeBox source in schemas/src/ to
 * schemas/v1/. With --check it writes nothing and exits 1 if anything on disk differs.
 */
import { readdirSync, readFileSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { TSchema } from '@sinclair/typebox';
import {
  emittedSchemas,
  ERROR_CODES,
  MESSAGES,
  STATE_SINCE,
  TASK_STATES,
  TASK_TRANSITIONS,
  TERMINAL_STATES,
} from '../schemas/src/index.ts';

export const SCHEMA_BASE = 'https://schemas.tap-protocol.org/v1/';
const DIALECT = 'https://json-schema.org/draft/2020-12/schema';
const OUT = resolve(dirname(fileURLToPath(import.meta.url)), '../schemas/v1');

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Replaces every nested schema that has its own file by a relative $ref to it. */
function externalize(node: Json, isRoot: boolean): Json {
  if (Array.isArray(node)) return node.map((n) => externalize(n, false));
  if (node === null || typeof node !== 'object') return node;
  if (!isRoot && typeof node.$id === 'string') return { $ref: node.$id };
  const out: { [k: string]: Json } = {};
  for (const [k, v] of Object.entries(node)) {
    // `properties`, `$defs` and friends map names to schemas: recurse into their values only.
    out[k] = externalize(v, false);
  }
  return out;
}

function ordered(schema: { [k: string]: Json }): { [k: string]: Json } {
  const { $id, title, description, ...rest } = schema;
  return { $schema: DIALECT, $id: SCHEMA_BASE + String($id), title, description, ...rest };
}

/** Every file under schemas/v1/ as it should be: name → content. */
export function renderAll(): Map<string, string> {
  const files = new Map<string, string>();
  for (const schema of emittedSchemas() as TSchema[]) {
    const plain = JSON.parse(JSON.stringify(schema)) as { [k: string]: Json };
    const id = plain.$id;
    if (typeof id !== 'string') throw new Error(`a schema without $id: ${plain.title}`);
    if (typeof plain.title !== 'string') throw new Error(`${id} has no title`);
    if (files.has(id)) continue;
    files.set(id, JSON.stringify(ordered(externalize(plain, true) as { [k: string]: Json }), null, 2) + '\n');
  }
  for (const [name, text] of files) {
    for (const m of text.matchAll(/"\$ref": "([^"#]+)/g)) {
      if (!files.has(m[1]!)) throw new Error(`${name} refers to ${m[1]}, which is not emitted`);
    }
  }
  files.set(BUNDLE_FILE, renderBundle(files));
  const table = (data: unknown) => JSON.stringify(data, null, 2) + '\n';
  files.set(
    'task-states.json',
    table({
      protocol: 'tap/1.0',
      description: 'TAP 1.0 task states: the initial state, the terminal set and every legal transition (agent side).',
      initial: TASK_STATES[0],
      states: TASK_STATES,
      terminal: TERMINAL_STATES,
      since: STATE_SINCE,
      transitions: TASK_TRANSITIONS,
    }),
  );
  files.set('error-codes.json', table({ protocol: 'tap/1.0', description: 'The TAP 1.0 error registry.', codes: ERROR_CODES }));
  files.set('messages.json', table({ protocol: 'tap/1.0', description: 'The TAP 1.0 message catalogue.', messages: MESSAGES }));
  return files;
}

/** The single-file bundle of every schema, beside the separate files in schemas/v1/. */
export const BUNDLE_FILE = 'bundle.json';

/**
 * One JSON Schema document holding every schema under `$defs`, keyed by file name, each with its
 * own `$id`: the relative `$ref`s resolve inside the document, so a tool that opens this one file
 * needs no network. Its root validates a message (message.schema.json).
 */
function renderBundle(schemas: ReadonlyMap<string, string>): string {
  const defs: { [k: string]: Json } = {};
  for (const name of [...schemas.keys()].sort()) {
    const { $schema: _sameDialect, ...schema } = JSON.parse(schemas.get(name)!) as { [k: string]: Json };
    defs[name] = schema;
  }
  const bundle = {
    $schema: DIALECT,
    $id: SCHEMA_BASE + BUNDLE_FILE,
    title: 'TAP 1.0 schemas (bundle)',
    description:
      'Every TAP 1.0 JSON Schema in one document: each under $defs by its file name, with its own $id, so relative $refs resolve offline. The root validates a message.',
    $ref: 'message.schema.json',
    $defs: defs,
  };
  return JSON.stringify(bundle, null, 2) + '\n';
}

function main(): number {
  const { values } = parseArgs({ options: { check: { type: 'boolean', default: false } } });
  const want = renderAll();
  const have = new Map<string, string>();
  mkdirSync(OUT, { recursive: true });
  for (const name of readdirSync(OUT)) have.set(name, readFileSync(join(OUT, name), 'utf8'));
  const changed = [...want].filter(([n, t]) => have.get(n) !== t).map(([n]) => n);
  const stale = [...have.keys()].filter((n) => !want.has(n));
  if (values.check) {
    if (changed.length + stale.length === 0) {
      console.log(`schemas/v1: ${want.size} files, no drift`);
      return 0;
    }
    for (const n of changed) console.error(`drift: schemas/v1/${n} differs from schemas/src (run npm run schemas)`);
    for (const n of stale) console.error(`drift: schemas/v1/${n} is not produced by schemas/src (delete it or run npm run schemas)`);
    return 1;
  }
  for (const n of stale) rmSync(join(OUT, n));
  for (const n of changed) writeFileSync(join(OUT, n), want.get(n)!);
  console.log(`schemas/v1: wrote ${changed.length}, removed ${stale.length}, ${want.size} files in all`);
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exit(main());
