/**
 * Validates the language-neutral fixtures against schemas/v1: valid messages pass, invalid ones
 * fail with the keyword and path their sidecar names, raw frames decode to the expected error,
 * and every golden transcript validates line by line and obeys the history rules.
 *
 *   npx tsx tools/validate-fixtures.ts [--verbose]
 *
 * The loaders and checks are exported for test/fixtures.test.ts and test/transcripts.test.ts.
 */
import { createHmac } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { checkTranscript, parseTranscript, type Violation } from '../reference/core/history.ts';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const SCHEMAS = join(ROOT, 'schemas/v1');
export const FIXTURES = join(ROOT, 'fixtures');
const ID_BASE = 'https://schemas.tap-protocol.org/v1/';

/** The pre-shared key of the signed fixtures (fixtures/messages/README.md): 32 bytes, base64url. */
export const FIXTURE_HMAC_KEY = 'dGFwLWZpeHR1cmUtaG1hYy1rZXktMzItYnl0ZXMtb2s';
export const FIXTURE_HMAC_KEY_ID = 'conform-key-1';

/** The golden transcripts every implementation can replay. */
export const REQUIRED_TRANSCRIPTS = [
  'handshake',
  'task-progress-output',
  'cancel-during-run',
  'resume-after-disconnect',
  'idempotent-retry',
  'plan-approved',
  'plan-rejected',
  'plan-revised',
  'shutdown-handoff',
  'version-mismatch',
  'forged-source',
] as const;

/** The message types of the catalogue, in order. */
export function catalogueTypes(): string[] {
  const cat = JSON.parse(readFileSync(join(SCHEMAS, 'messages.json'), 'utf8')) as { messages: { type: string }[] };
  return cat.messages.map((m) => m.type);
}

/** Ajv 2020-12, strict, with formats and discriminator, holding every schemas/v1 file. */
export function createAjv(): Ajv2020 {
  const ajv = new Ajv2020({ strict: true, allErrors: true, discriminator: true });
  addFormats.default(ajv);
  for (const f of readdirSync(SCHEMAS).filter((n) => n.endsWith('.schema.json')))
    ajv.addSchema(JSON.parse(readFileSync(join(SCHEMAS, f), 'utf8')));
  return ajv;
}

/** Validates `value` against one schema file; returns null when it passes, else Ajv's errors. */
export function validateWith(ajv: Ajv2020, schemaFile: string, value: unknown): ErrorObject[] | null {
  const validate = ajv.getSchema(ID_BASE + schemaFile);
  if (!validate) throw new Error(`schemas/v1/${schemaFile} is not loaded`);
  return validate(value) ? null : (validate.errors ?? []);
}

export interface ValidFixture {
  type: string;
  name: string;
  file: string;
  message: Record<string, unknown>;
}
export interface Expectation {
  error: 'INVALID_MESSAGE' | 'MALFORMED_MESSAGE';
  keyword: string;
  path: string;
  why: string;
  decode?: { rejectDuplicateMembers?: boolean };
}
export interface InvalidFixture {
  folder: string;
  name: string;
  file: string;
  raw: boolean;
  bytes: Uint8Array;
  expect: Expectation;
}
export interface TranscriptFixture {
  name: string;
  file: string;
  lines: unknown[];
}

const dirs = (p: string) =>
  readdirSync(p)
    .filter((n) => statSync(join(p, n)).isDirectory())
    .sort();
const rel = (p: string) => p.slice(ROOT.length);

/** fixtures/messages/<type>/<scenario>.json */
export function validFixtures(): ValidFixture[] {
  const base = join(FIXTURES, 'messages');
  return dirs(base).flatMap((type) =>
    readdirSync(join(base, type))
      .filter((n) => n.endsWith('.json'))
      .sort()
      .map((n) => ({
        type,
        name: basename(n, '.json'),
        file: rel(join(base, type, n)),
        message: JSON.parse(readFileSync(join(base, type, n), 'utf8')),
      })),
  );
}

/** fixtures/invalid/<folder>/<scenario>.{json,txt,bin} with <scenario>.expect.json beside each. */
export function invalidFixtures(): InvalidFixture[] {
  const base = join(FIXTURES, 'invalid');
  return dirs(base).flatMap((folder) =>
    readdirSync(join(base, folder))
      .filter((n) => !n.endsWith('.expect.json') && /\.(json|txt|bin)$/.test(n))
      .sort()
      .map((n) => {
        const name = n.replace(/\.(json|txt|bin)$/, '');
        const file = join(base, folder, n);
        const expect = JSON.parse(readFileSync(join(base, folder, `${name}.expect.json`), 'utf8')) as Expectation;
        return { folder, name, file: rel(file), raw: !n.endsWith('.json'), bytes: new Uint8Array(readFileSync(file)), expect };
      }),
  );
}

/** Sidecars without a fixture beside them. */
export function orphanSidecars(): string[] {
  const base = join(FIXTURES, 'invalid');
  return dirs(base).flatMap((folder) => {
    const names = readdirSync(join(base, folder));
    return names
      .filter((n) => n.endsWith('.expect.json'))
      .filter((n) => !['json', 'txt', 'bin'].some((e) => names.includes(n.replace(/\.expect\.json$/, `.${e}`))))
      .map((n) => `fixtures/invalid/${folder}/${n}`);
  });
}

/** fixtures/transcripts/<name>.ndjson */
export function transcriptFixtures(): TranscriptFixture[] {
  const base = join(FIXTURES, 'transcripts');
  return readdirSync(base)
    .filter((n) => n.endsWith('.ndjson'))
    .sort()
    .map((n) => ({ name: basename(n, '.ndjson'), file: rel(join(base, n)), lines: parseTranscript(readFileSync(join(base, n), 'utf8')) }));
}

export interface DocumentFixture {
  /** The schema file the document is an instance of, e.g. "task-record.schema.json". */
  schema: string;
  name: string;
  file: string;
  value: unknown;
  /** For an invalid document, why it fails; absent for a valid one. */
  expect?: Expectation;
}

/**
 * fixtures/workspace/<schema>/<scenario>.json (valid) and fixtures/workspace/invalid/<schema>/ with
 * sidecars (invalid): workspace-binding documents, which are files rather than messages.
 */
export function workspaceFixtures(): { valid: DocumentFixture[]; invalid: DocumentFixture[] } {
  const base = join(FIXTURES, 'workspace');
  const load = (dir: string, folder: string, withSidecar: boolean): DocumentFixture[] =>
    readdirSync(join(dir, folder))
      .filter((n) => n.endsWith('.json') && !n.endsWith('.expect.json'))
      .sort()
      .map((n) => {
        const file = join(dir, folder, n);
        const name = basename(n, '.json');
        const doc: DocumentFixture = {
          schema: `${folder}.schema.json`,
          name,
          file: rel(file),
          value: JSON.parse(readFileSync(file, 'utf8')),
        };
        if (withSidecar) doc.expect = JSON.parse(readFileSync(join(dir, folder, `${name}.expect.json`), 'utf8')) as Expectation;
        return doc;
      });
  return {
    valid: dirs(base)
      .filter((d) => d !== 'invalid')
      .flatMap((d) => load(base, d, false)),
    invalid: dirs(join(base, 'invalid')).flatMap((d) => load(join(base, 'invalid'), d, true)),
  };
}

/** Problems with one workspace document: a valid one passes its schema, an invalid one fails as its sidecar says. */
export function checkDocument(ajv: Ajv2020, f: DocumentFixture): string[] {
  const errors = validateWith(ajv, f.schema, f.value);
  if (!f.expect) return errors ? [`fails ${f.schema}: ${show(errors)}`] : [];
  return matches(errors, f.expect)
    ? []
    : [`${f.schema} should fail with ${f.expect.keyword} at "${f.expect.path}": ${errors ? show(errors) : 'it passes'}`];
}

/** RFC 8785 canonical JSON for the values fixtures use (strings, finite numbers, booleans, null, arrays, objects). */
export function canonicalize(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonicalize).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalize(o[k])}`)
    .join(',')}}`;
}

/** The HMAC-SHA256 (base64url, no padding) of a message with signature.value removed (spec: security#integrity). */
export function fixtureMac(message: Record<string, unknown>, keyB64url = FIXTURE_HMAC_KEY): string {
  const { value: _omit, ...signature } = message.signature as Record<string, unknown>;
  const input = canonicalize({ ...message, signature });
  return createHmac('sha256', Buffer.from(keyB64url, 'base64url')).update(input, 'utf8').digest('base64url');
}

const matches = (errors: ErrorObject[] | null, e: Expectation) =>
  (errors ?? []).some((x) => x.keyword === e.keyword && x.instancePath === e.path);
const show = (errors: ErrorObject[] | null) => (errors ?? []).map((x) => `${x.keyword} at "${x.instancePath}"`).join(', ');

/** Problems with one valid fixture (an empty list when it is fine). */
export function checkValid(ajv: Ajv2020, f: ValidFixture): string[] {
  const out: string[] = [];
  if (f.message.type !== f.type) out.push(`type is ${String(f.message.type)}, folder is ${f.type}`);
  for (const schema of [`${f.type}.schema.json`, 'message.schema.json']) {
    const errors = validateWith(ajv, schema, f.message);
    if (errors) out.push(`fails ${schema}: ${show(errors)}`);
  }
  if (f.message.signature && fixtureMac(f.message) !== (f.message.signature as { value?: string }).value)
    out.push('signature.value is not the HMAC of the message under the fixture key');
  return out;
}

/**
 * Problems with one invalid fixture: it must fail message.schema.json, and the schema that decides
 * (the envelope for fixtures/invalid/envelope/, else the type's own schema, the envelope passing)
 * must fail with the sidecar's keyword at the sidecar's path.
 */
export function checkInvalid(ajv: Ajv2020, f: InvalidFixture): string[] {
  const e = f.expect;
  if (f.raw) {
    const d = decodeStrict(f.bytes, e.decode ?? {});
    if (d.ok) return ['decodes as a valid JSON object'];
    const got = `${d.error} ${d.keyword} at "${d.path}"`;
    return got === `${e.error} ${e.keyword} at "${e.path}"`
      ? []
      : [`expected ${e.error} ${e.keyword} at "${e.path}", got ${got} (${d.message})`];
  }
  if (e.error !== 'INVALID_MESSAGE') return [`a JSON object fixture fails with INVALID_MESSAGE, not ${e.error}`];
  const message = JSON.parse(new TextDecoder().decode(f.bytes)) as unknown;
  const out: string[] = [];
  const envelope = validateWith(ajv, 'envelope.schema.json', message);
  const all = validateWith(ajv, 'message.schema.json', message);
  if (!all) out.push('passes message.schema.json');
  if (f.folder === 'envelope') {
    if (!matches(envelope, e))
      out.push(`envelope.schema.json should fail with ${e.keyword} at "${e.path}": ${envelope ? show(envelope) : 'it passes'}`);
  } else {
    if (envelope) out.push(`the envelope should pass (the fault is in the ${f.folder} rules): ${show(envelope)}`);
    const own = validateWith(ajv, `${f.folder}.schema.json`, message);
    if (!matches(own, e))
      out.push(`${f.folder}.schema.json should fail with ${e.keyword} at "${e.path}": ${own ? show(own) : 'it passes'}`);
  }
  return out;
}

/** Problems with one transcript: schema failures per line and history/reply violations. */
export function checkTranscriptFixture(ajv: Ajv2020, t: TranscriptFixture): string[] {
  const out: string[] = [];
  t.lines.forEach((line, i) => {
    const m = (line as { message?: { type?: unknown } } | null)?.message;
    if (!m) return;
    const type = String(m.type);
    const errors = validateWith(ajv, catalogueTypes().includes(type) ? `${type}.schema.json` : 'message.schema.json', m);
    if (errors) out.push(`line ${i + 1} (${type}) fails its schema: ${show(errors)}`);
  });
  for (const v of checkTranscript(t.lines)) out.push(formatViolation(v));
  return out;
}

export const formatViolation = (v: Violation) => `line ${v.index + 1}${v.task_id ? ` [${v.task_id}]` : ''}: ${v.rule}: ${v.message}`;

export type Decoded =
  | { ok: true; value: Record<string, unknown> }
  | { ok: false; error: 'MALFORMED_MESSAGE' | 'INVALID_MESSAGE'; keyword: 'json' | 'i-json'; path: string; message: string };

/**
 * A strict frame decoder (spec: envelope#encoding): UTF-8 without BOM, one RFC 8259 JSON object,
 * optionally no duplicate member names, then I-JSON (integers within ±(2^53−1), no lone surrogates).
 */
export function decodeStrict(bytes: Uint8Array, opts: { rejectDuplicateMembers?: boolean } = {}): Decoded {
  const malformed = (message: string): Decoded => ({ ok: false, error: 'MALFORMED_MESSAGE', keyword: 'json', path: '', message });
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return malformed('the frame is not valid UTF-8');
  }
  if (text.charCodeAt(0) === 0xfeff) return malformed('the frame starts with a byte order mark');
  const p = new StrictJson(text);
  let value: unknown;
  try {
    value = p.document();
  } catch (err) {
    return malformed((err as Error).message);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return malformed('the frame is not a JSON object');
  if (opts.rejectDuplicateMembers && p.duplicate) return malformed(`duplicate member name at "${p.duplicate}"`);
  if (p.ijson) return { ok: false, error: 'INVALID_MESSAGE', keyword: 'i-json', path: p.ijson.path, message: p.ijson.message };
  return { ok: true, value: value as Record<string, unknown> };
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const pointer = (path: string[]) => path.map((s) => '/' + s.replace(/~/g, '~0').replace(/\//g, '~1')).join('');
function wellFormed(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (!(d >= 0xdc00 && d <= 0xdfff)) return false;
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) return false;
  }
  return true;
}

/** Recursive-descent RFC 8259 parser that records the first duplicate member and the first I-JSON breach. */
class StrictJson {
  private i = 0;
  private readonly path: string[] = [];
  duplicate: string | undefined;
  ijson: { path: string; message: string } | undefined;
  constructor(private readonly s: string) {}

  document(): unknown {
    const v = this.value();
    this.ws();
    if (this.i !== this.s.length) this.fail('unexpected text after the JSON value');
    return v;
  }
  private fail(what: string): never {
    throw new Error(`${what} at offset ${this.i}`);
  }
  private ws() {
    while (this.i < this.s.length && ' \t\n\r'.includes(this.s[this.i]!)) this.i++;
  }
  private value(): unknown {
    this.ws();
    const c = this.s[this.i];
    if (c === '{') return this.object();
    if (c === '[') return this.array();
    if (c === '"') return this.string();
    for (const [word, v] of [
      ['true', true],
      ['false', false],
      ['null', null],
    ] as const)
      if (this.s.startsWith(word, this.i)) {
        this.i += word.length;
        return v;
      }
    return this.number();
  }
  private object(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const keys = new Set<string>();
    this.i++;
    this.ws();
    if (this.s[this.i] === '}') return (this.i++, out);
    for (;;) {
      this.ws();
      if (this.s[this.i] !== '"') this.fail('expected a member name');
      const key = this.string();
      if (keys.has(key)) this.duplicate ??= pointer([...this.path, key]);
      keys.add(key);
      this.ws();
      if (this.s[this.i++] !== ':') this.fail('expected ":"');
      this.path.push(key);
      Object.defineProperty(out, key, { value: this.value(), enumerable: true, configurable: true, writable: true });
      this.path.pop();
      this.ws();
      const c = this.s[this.i++];
      if (c === '}') return out;
      if (c !== ',') this.fail('expected "," or "}"');
    }
  }
  private array(): unknown[] {
    const out: unknown[] = [];
    this.i++;
    this.ws();
    if (this.s[this.i] === ']') return (this.i++, out);
    for (;;) {
      this.path.push(String(out.length));
      out.push(this.value());
      this.path.pop();
      this.ws();
      const c = this.s[this.i++];
      if (c === ']') return out;
      if (c !== ',') this.fail('expected "," or "]"');
    }
  }
  private string(): string {
    let out = '';
    this.i++;
    for (;;) {
      const c = this.s[this.i++];
      if (c === undefined) this.fail('unterminated string');
      if (c === '"') break;
      if (c.charCodeAt(0) < 0x20) this.fail('unescaped control character in a string');
      if (c !== '\\') {
        out += c;
        continue;
      }
      const e = this.s[this.i++];
      const simple: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
      if (e !== undefined && e in simple) out += simple[e];
      else if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(this.s.slice(this.i, this.i + 4))) {
        out += String.fromCharCode(parseInt(this.s.slice(this.i, this.i + 4), 16));
        this.i += 4;
      } else this.fail('bad escape in a string');
    }
    if (!wellFormed(out)) this.ijson ??= { path: pointer(this.path), message: 'a string holds a lone surrogate' };
    return out;
  }
  private number(): number {
    const m = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(this.s.slice(this.i, this.i + 400));
    if (!m) this.fail('unexpected character');
    this.i += m[0].length;
    if (m[2] === undefined && m[3] === undefined) {
      const n = BigInt(m[0]);
      if (n > MAX_SAFE || n < -MAX_SAFE) this.ijson ??= { path: pointer(this.path), message: `the integer ${m[0]} lies outside ±(2^53−1)` };
    }
    return Number(m[0]);
  }
}

/** Runs every check and prints a summary; exit status 1 when anything fails. */
function main(): void {
  const verbose = process.argv.includes('--verbose');
  const ajv = createAjv();
  let failures = 0;
  const report = (what: string, problems: string[]) => {
    if (problems.length) {
      failures++;
      console.log(`FAIL ${what}`);
      for (const p of problems) console.log(`     ${p}`);
    } else if (verbose) console.log(`ok   ${what}`);
  };
  const valid = validFixtures();
  const invalid = invalidFixtures();
  const transcripts = transcriptFixtures();
  const documents = workspaceFixtures();
  for (const f of valid) report(f.file, checkValid(ajv, f));
  for (const f of [...documents.valid, ...documents.invalid]) report(f.file, checkDocument(ajv, f));
  for (const f of invalid) report(f.file, checkInvalid(ajv, f));
  for (const t of transcripts) report(t.file, checkTranscriptFixture(ajv, t));
  for (const o of orphanSidecars()) report(o, ['no fixture beside this sidecar']);
  const types = new Set(valid.map((f) => f.type));
  report(
    'every message type has a valid fixture',
    catalogueTypes()
      .filter((t) => !types.has(t))
      .map((t) => `no fixtures/messages/${t}/`),
  );
  const names = new Set(transcripts.map((t) => t.name));
  report(
    'every required transcript exists',
    REQUIRED_TRANSCRIPTS.filter((n) => !names.has(n)).map((n) => `no fixtures/transcripts/${n}.ndjson`),
  );
  console.log(
    `${valid.length} valid messages, ${invalid.length} invalid (${invalid.filter((f) => f.raw).length} raw frames), ` +
      `${transcripts.length} transcripts (${transcripts.reduce((n, t) => n + t.lines.length, 0)} lines), ` +
      `${documents.valid.length + documents.invalid.length} workspace documents: ` +
      (failures ? `${failures} failing` : 'all pass'),
  );
  if (failures) {
    console.log('Fix the fixture or its .expect.json sidecar; rerun with --verbose to list every file checked.');
    process.exitCode = 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
