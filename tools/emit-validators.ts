/**
 * Compiles every schema in schemas/v1 to validator code ahead of time (Ajv standalone), so no
 * process compiles a schema at start-up (spec: messages#payload-validation). Writes
 * reference/core/validators.generated.js and its .d.ts, a small module that loads the compiled
 * validators from the folder beside it (validators.generated/: full.cjs, and quick/<file>.cjs per
 * quick check) when each is first used; `npm run build` runs it before the compile and copies all
 * of it into dist/. The files are derived, never committed: the build always writes them afresh
 * from schemas/v1.
 *
 * Besides each file's own validator, every message schema gets a body variant
 * (`<type>.body.schema.json`): the same schema without the `allOf` that repeats the envelope,
 * for messages whose envelope the decoder has already checked. And the JSON Schema 2020-12
 * meta-schema gets one (META_SCHEMAS), so that a capability's own input schema is checked before
 * it is compiled without compiling the meta-schema first; Ajv with its formats is bundled into
 * one module (schemaCompiler()), for the agents that bring schemas of their own; and tap-conform's
 * own validators (HARNESS) are compiled from the published files on disk with the harness's options.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import standaloneCode from 'ajv/dist/standalone/index.js';
import { buildSync } from 'esbuild';
import { SCHEMA_FILES } from '../reference/core/schema-bundle.ts';

const root = new URL('..', import.meta.url).pathname;
const BASE = 'https://schemas.tap-protocol.org/v1/';
/** The meta-schema whose validator is emitted too (META_SCHEMAS), for schemas the agents bring. */
export const META_SCHEMA = 'https://json-schema.org/draft/2020-12/schema';
export const VALIDATORS_JS = join(root, 'reference/core/validators.generated.js');
const VALIDATORS_DTS = join(root, 'reference/core/validators.generated.d.ts');
/** The folder beside the module that holds the compiled validators, one CommonJS module per group. */
export const MODULES_DIR = 'validators.generated';

/** The body variant of a message schema: its own members without the envelope's allOf. */
function bodyOf(schema: Record<string, unknown>, file: string): Record<string, unknown> | undefined {
  if (!Array.isArray(schema.allOf) || file.includes('.payload.')) return undefined;
  const { allOf: _envelope, $id: _id, ...rest } = schema;
  return { ...rest, $id: `${BASE}${file.replace(/\.schema\.json$/, '.body.schema.json')}` };
}

/**
 * The schemas checked on the way of every message, at every start or for every workspace task,
 * besides the body variants and the capability input schemas: a valid value of these costs only a
 * quick check (and a workspace agent never loads the full validators for a valid record).
 */
const QUICK_FILES = new Set(['envelope.schema.json', 'agent-card.schema.json', 'plan.schema.json', 'task-record.schema.json']);

/**
 * The generated module (`facade`) and the CommonJS modules it loads (`modules`, by path under
 * MODULES_DIR): one validator per schema file and body variant, keyed by file name
 * (VALIDATORS, every error collected, all in full.cjs), and a quick check of the envelope, the agent card, the
 * plan, the workspace task record, each body variant and each capability input schema (QUICK: stops at the first failure, and skips the `date-time` format wherever the Timestamp
 * pattern beside it already holds, a pattern whose every match is a valid RFC 3339 date-time).
 * A quick check says only valid or not; the full validator names the issues.
 */
export function validatorsSource(): { facade: string; modules: Record<string, string> } {
  const full = new Ajv2020({
    strict: true,
    allErrors: true,
    discriminator: true,
    inlineRefs: false,
    code: { source: true },
    keywords: ['since'],
  });
  addFormats.default(full);
  const quick = new Ajv2020({ strict: true, allErrors: false, discriminator: true, code: { source: true }, keywords: ['since'] });
  addFormats.default(quick);
  quick.addFormat('date-time', true);
  const names: [string, string][] = [];
  for (const [file, schema] of Object.entries(SCHEMA_FILES)) {
    full.addSchema(schema as object);
    quick.addSchema(schema as object);
    names.push([file, BASE + file]);
    const body = bodyOf(schema as Record<string, unknown>, file);
    if (body) {
      full.addSchema(body);
      quick.addSchema(body);
      names.push([String(body.$id).slice(BASE.length), String(body.$id)]);
    }
  }
  const quickNames = names.filter(
    ([file]) => QUICK_FILES.has(file) || file.endsWith('.body.schema.json') || file.endsWith('.input.schema.json'),
  );
  for (const [file, id] of quickNames) if (file.endsWith('.body.schema.json')) assertTimestampsPatterned(quick, id);
  const exportsMap = Object.fromEntries(names.map(([, id], i) => [`v${i}`, id]));
  const table = names.map(([file], i) => `  [${JSON.stringify(file)}, 'v${i}'],\n`).join('');
  const modules: Record<string, string> = { 'full.cjs': standaloneCode.default(full, exportsMap) };
  const quickPaths = quickNames.map(([file, id]): [string, string] => {
    const path = `quick/${file.replace(/\.json$/, '.cjs')}`;
    modules[path] = standaloneCode.default(quick, { q: id });
    return [file, path];
  });
  // The check of a capability's own input schema against JSON Schema 2020-12, the meta-schema a
  // schema compiler would otherwise compile at the start of every agent that declares one.
  const meta = new Ajv2020({ strict: false, allErrors: true, code: { source: true } });
  modules['meta.cjs'] = standaloneCode.default(meta, { m: META_SCHEMA });
  const published = harnessFiles();
  modules['harness.cjs'] = harnessSource(published);
  // The schema compiler itself, Ajv and its formats as one file: required from node_modules it is
  // some forty files to resolve and compile, 35 ms of every start of an agent that brings a schema.
  modules['compiler.cjs'] = buildSync({
    stdin: {
      contents: "module.exports = { Ajv2020: require('ajv/dist/2020.js').Ajv2020, addFormats: require('ajv-formats').default };",
      resolveDir: root,
      loader: 'js',
    },
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    write: false,
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'inline',
  }).outputFiles[0]!.text;
  const quickTable = quickPaths.map(([file, path]) => `  [${JSON.stringify(file)}, ${JSON.stringify(path)}],\n`).join('');
  const facade = [
    '// Generated by tools/emit-validators.ts from schemas/v1 (Ajv standalone code); do not edit.\n',
    // Ajv's standalone code is CommonJS. Each module is loaded the first time one of its checks is asked
    // for: the full validators only to name the issues of an invalid message, each quick check when a
    // process first meets its schema, so a start-up never parses the megabyte of validators.
    "import { createRequire } from 'node:module';\n",
    'const require = createRequire(import.meta.url);\n',
    `const DIR = './${MODULES_DIR}/';\n`,
    'function lazily(target, file, make) {\n  Object.defineProperty(target, file, {\n    enumerable: true,\n    configurable: true,\n',
    '    get() {\n      const fn = make();\n      Object.defineProperty(target, file, { value: fn, enumerable: true });\n      return fn;\n    },\n  });\n}\n',
    'export const VALIDATORS = {};\n',
    `for (const [file, key] of [\n${table}]) lazily(VALIDATORS, file, () => require(DIR + 'full.cjs')[key]);\n`,
    'export const QUICK = {};\n',
    `for (const [file, path] of [\n${quickTable}]) lazily(QUICK, file, () => require(DIR + path).q);\n`,
    `export const META_SCHEMA = ${JSON.stringify(META_SCHEMA)};\n`,
    'export const META_SCHEMAS = {};\n',
    "lazily(META_SCHEMAS, META_SCHEMA, () => require(DIR + 'meta.cjs').m);\n",
    "export function schemaCompiler() {\n  return require(DIR + 'compiler.cjs');\n}\n",
    'export const HARNESS = {};\n',
    `for (const [file, key] of [\n${published
      .map((file, i) => `  [${JSON.stringify(file)}, 'h${i}'],\n`)
      .join('')}]) lazily(HARNESS, file, () => require(DIR + 'harness.cjs')[key]);\n`,
  ].join('');
  return { facade, modules };
}

/** The published schema files, as tap-conform reads them: every `*.schema.json` of schemas/v1 on disk. */
function harnessFiles(): string[] {
  return readdirSync(join(root, 'schemas/v1'))
    .filter((f) => f.endsWith('.schema.json'))
    .sort();
}

/**
 * tap-conform's validators (HARNESS): compiled from the published files of schemas/v1 as they are
 * on disk, never from the reference's TypeBox source, with the harness's own options (strict,
 * every error collected, no inlining choice of the reference's), so the harness judges agents by
 * the published text. Compiling them in every tap-conform process took about 160 ms of CPU at its
 * first message; ahead of time, a run loads them in about 16 ms.
 */
function harnessSource(files: readonly string[]): string {
  const harness = new Ajv2020({
    strict: true,
    keywords: ['since'],
    allErrors: true,
    discriminator: true,
    // The files are checked against the JSON Schema meta-schema by their own tests (test/schemas.test.ts).
    validateSchema: false,
    code: { source: true },
  });
  addFormats.default(harness);
  for (const file of files) harness.addSchema(JSON.parse(readFileSync(join(root, 'schemas/v1', file), 'utf8')) as object);
  return standaloneCode.default(harness, Object.fromEntries(files.map((file, i) => [`h${i}`, BASE + file])));
}

/** The Timestamp pattern: every string it matches is an RFC 3339 date-time in UTC. */
const TIMESTAMP_PATTERN = (SCHEMA_FILES['envelope.schema.json'] as { properties: { timestamp: { pattern: string } } }).properties.timestamp
  .pattern;

/** Refuses to emit a quick check that would skip a `date-time` format not guarded by the Timestamp pattern. */
function assertTimestampsPatterned(ajv: Ajv2020, id: string): void {
  const visit = (node: unknown, where: string): void => {
    if (node === null || typeof node !== 'object') return;
    const o = node as Record<string, unknown>;
    if (o.format === 'date-time' && o.pattern !== TIMESTAMP_PATTERN) {
      throw new Error(`${where}: a date-time without the Timestamp pattern; the quick check would skip its format`);
    }
    for (const [k, v] of Object.entries(o)) visit(v, `${where}/${k}`);
  };
  for (const file of Object.keys(SCHEMA_FILES)) visit(ajv.getSchema(BASE + file)?.schema, file);
  visit(ajv.getSchema(id)?.schema, id);
}

/** Writes the module, its declaration and its folder of validators; returns their size in bytes. */
export function emitValidators(): number {
  const { facade, modules } = validatorsSource();
  writeFileSync(VALIDATORS_JS, facade);
  const dir = join(dirname(VALIDATORS_JS), MODULES_DIR);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'quick'), { recursive: true });
  let bytes = Buffer.byteLength(facade);
  for (const [name, code] of Object.entries(modules)) {
    writeFileSync(join(dir, name), code);
    bytes += Buffer.byteLength(code);
  }
  writeFileSync(
    VALIDATORS_DTS,
    [
      '// Generated by tools/emit-validators.ts; do not edit.\n',
      "import type { ValidateFunction } from 'ajv';\n",
      '/** The validator of every schema file in schemas/v1 and of each message schema without its envelope (`<type>.body.schema.json`). */\n',
      'export declare const VALIDATORS: Readonly<Record<string, ValidateFunction>>;\n',
      '/** Quick checks of the envelope, the agent card, the plan, each body variant and each capability input schema: valid or not, without issues. */\n',
      'export declare const QUICK: Readonly<Record<string, ValidateFunction>>;\n',
      '/** The URI of the meta-schema whose validator META_SCHEMAS holds: JSON Schema 2020-12. */\n',
      `export declare const META_SCHEMA: ${JSON.stringify(META_SCHEMA)};\n`,
      '/** The validator of the JSON Schema 2020-12 meta-schema, under its URI: whether a schema is one. */\n',
      'export declare const META_SCHEMAS: Readonly<Record<string, ValidateFunction>>;\n',
      '/** Ajv 2020 and ajv-formats, bundled into one module that loads in a third of the time. */\n',
      "export declare function schemaCompiler(): { Ajv2020: typeof import('ajv/dist/2020.js').Ajv2020; addFormats: typeof import('ajv-formats').default };\n",
      "/** tap-conform's validators, by file name: compiled from the published files of schemas/v1 with the harness's options. */\n",
      'export declare const HARNESS: Readonly<Record<string, ValidateFunction>>;\n',
    ].join(''),
  );
  return bytes;
}

/**
 * Emits the validators when the module is missing or older than a schema of schemas/v1 or this
 * emitter, and says whether it did. For scripts run from the sources of a clone (the site, which
 * imports the conformance cases and through them the core's validation) before any `npm run build`.
 */
export function ensureValidators(): boolean {
  const inputs = [
    fileURLToPath(import.meta.url),
    ...readdirSync(join(root, 'schemas/v1'))
      .filter((f) => f.endsWith('.json'))
      .map((f) => join(root, 'schemas/v1', f)),
  ];
  if (existsSync(VALIDATORS_JS) && existsSync(join(dirname(VALIDATORS_JS), MODULES_DIR))) {
    const emitted = statSync(VALIDATORS_JS).mtimeMs;
    if (inputs.every((f) => statSync(f).mtimeMs <= emitted)) return false;
  }
  emitValidators();
  return true;
}

// The scripts run from the sources (npm test, npm run test:fast and the demos) run this first
// (their `pre` scripts): they import the core before any build step. `--if-stale` writes the
// validators only when a schema is newer than they are, and then says so; a package installed
// from its tarball has them in dist/ and runs none of this.
if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv.includes('--if-stale')) {
    if (ensureValidators()) console.log('emit-validators: wrote reference/core/validators.generated.js (a schema was newer)');
  } else {
    const bytes = emitValidators();
    console.log(`emit-validators: reference/core/validators.generated.js and ${MODULES_DIR}/ (${Math.round(bytes / 1024)} KiB)`);
  }
}
