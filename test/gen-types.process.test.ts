/**
 * Generated types: each language is generated from schemas/v1 and then compiled or loaded by
 * its own toolchain — tsc for TypeScript, python3 for Python, go vet/build for Go and cargo for
 * Rust — and made to parse every valid fixture into the type of its message. A toolchain that is
 * not installed skips its test with the reason.
 */
import { CARGO_REGISTRY, lacks, needing } from './system-tools.testkit.ts';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { commandFor, generate, LANGS, runGenTypes } from '../tools/gen-types/main.ts';
import { buildModel } from '../tools/gen-types/model.ts';
import { splitOf } from '../reference/tapctl/gen-types/typescript.ts';
import { ROOT } from '../tools/site/sources.ts';
import { typeWorldCheck } from '../tools/tarball/type-world.ts';
import { canonicalize } from '../tools/validate-fixtures.ts';

const FIXTURES = join(ROOT, 'fixtures', 'messages');
const INVALID = join(ROOT, 'fixtures', 'invalid');
const scratch = mkdtempSync(join(tmpdir(), 'tap-gen-types-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Every valid fixture: its folder (the message type) and path. */
const validFixtures = readdirSync(FIXTURES, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .flatMap((d) =>
    readdirSync(join(FIXTURES, d.name))
      .filter((f) => f.endsWith('.json'))
      .map((f) => ({ type: d.name, path: join(FIXTURES, d.name, f) })),
  );

/**
 * The invalid fixtures the generated Python must refuse: all JSON-object fixtures except those
 * whose rule is a combination the generated code leaves to schema validation — an anyOf/not
 * over nested members, and the envelope's if/else that allows "*" as target only in handshake.init.
 */
function invalidSample(): Array<{ path: string; why: string }> {
  const out: Array<{ path: string; why: string }> = [];
  for (const dir of readdirSync(INVALID, { withFileTypes: true }).filter(
    (d) => d.isDirectory() && d.name !== 'malformed' && d.name !== 'i-json',
  )) {
    for (const f of readdirSync(join(INVALID, dir.name)).filter((n) => n.endsWith('.json') && !n.endsWith('.expect.json'))) {
      const expect = JSON.parse(readFileSync(join(INVALID, dir.name, f.replace(/\.json$/, '.expect.json')), 'utf8')) as {
        keyword: string;
        path: string;
        why: string;
      };
      if (expect.keyword === 'anyOf' && dir.name === 'task.result') continue;
      if (dir.name === 'envelope' && expect.path === '/target' && expect.keyword === 'pattern') continue;
      // The W3C forms of the trace context hold in tap/1.1 messages only (an if on protocol; spec:
      // envelope#trace-context): a rule across members, which the generated classes do not check.
      if (dir.name === 'envelope' && /^\/metadata\/(traceparent|tracestate|baggage)$/.test(expect.path)) continue;
      out.push({ path: join(INVALID, dir.name, f), why: expect.why });
    }
  }
  return out;
}

/** The numbers of a JSON text as written, sorted: an integer written back as 90.0 changes them. */
function numberLexemes(text: string): string[] {
  return [...text.matchAll(/"(?:[^"\\]|\\.)*"|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/g)]
    .map((m) => m[0])
    .filter((t) => !t.startsWith('"'))
    .sort();
}

/**
 * Checks the re-encoded fixtures a program printed, one "= <json>" line per valid fixture in
 * order: each must have the RFC 8785 form of the fixture it came from, and write its numbers as
 * the fixture does.
 */
function expectLossless(output: string): void {
  const lines = output
    .split('\n')
    .filter((l) => l.startsWith('= '))
    .map((l) => l.slice(2));
  expect(lines.length).toBe(validFixtures.length);
  const problems: string[] = [];
  validFixtures.forEach((f, i) => {
    const input = readFileSync(f.path, 'utf8');
    const name = f.path.slice(ROOT.length);
    const [want, got] = [canonicalize(JSON.parse(input)), canonicalize(JSON.parse(lines[i]!))];
    if (got !== want) problems.push(`${name}: the RFC 8785 form changed\n  in:  ${want}\n  out: ${got}`);
    else if (numberLexemes(lines[i]!).join() !== numberLexemes(input).join())
      problems.push(`${name}: numbers written as ${numberLexemes(lines[i]!).join(' ')}, not ${numberLexemes(input).join(' ')}`);
  });
  expect(problems).toEqual([]);
}

/** The I-JSON fixtures (fixtures/invalid/i-json/): texts a strict decoder refuses. */
const iJsonFixtures = readdirSync(join(INVALID, 'i-json'))
  .filter((n) => n.endsWith('.txt'))
  .map((n) => join(INVALID, 'i-json', n));

/** Writes a file unless it already holds exactly this text, so that its modification time says when it last changed. */
function writeIfChanged(path: string, text: string): void {
  if (existsSync(path) && readFileSync(path, 'utf8') === text) return;
  writeFileSync(path, text);
}

function has(cmd: string, args: string[] = ['--version']): boolean {
  return spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;
}

/** Runs a command; on failure the error carries its output. */
function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}, timeout = 600_000): string {
  try {
    return execFileSync(cmd, args, { cwd, env: { ...process.env, ...env }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

async function generateInto(lang: string, folder = lang): Promise<string> {
  const out = join(scratch, folder);
  const lines: string[] = [];
  const code = await runGenTypes(
    ['--lang', lang, '--out', out],
    (s) => lines.push(s),
    (s) => lines.push(s),
  );
  expect(code, lines.join('')).toBe(0);
  return out;
}

describe('gen-types command', () => {
  it('refuses an unknown language or a missing --out with a usage error that says what to do', async () => {
    const err: string[] = [];
    expect(
      await runGenTypes(
        ['--lang', 'cobol', '--out', scratch],
        () => {},
        (s) => err.push(s),
      ),
    ).toBe(2);
    expect(err.join('')).toMatch(/--lang cobol is not one of ts, python, go, rust/);
    err.length = 0;
    expect(
      await runGenTypes(
        ['--lang', 'go'],
        () => {},
        (s) => err.push(s),
      ),
    ).toBe(2);
    expect(err.join('')).toMatch(/--out is missing/);
  });

  it('is deterministic: the same schemas give the same files', async () => {
    for (const l of LANGS) {
      const a = await generate(l.lang);
      const b = await generate(l.lang);
      expect([...a.keys()]).toEqual([l.file]);
      expect(a.get(l.file)).toBe(b.get(l.file));
    }
  });

  it('runs as tapctl gen-types', () => {
    const out = join(scratch, 'tapctl-python');
    const text = run(process.execPath, [join(ROOT, 'bin', 'tapctl.mjs'), 'gen-types', '--lang', 'python', '--out', out], ROOT);
    expect(text).toContain('tap_types.py');
    expect(existsSync(join(out, 'tap_types.py'))).toBe(true);
    expect(commandFor('python', './t')).toBe('npx tapctl gen-types --lang python --out ./t');
  }, 60_000);

  it('gives one type per message and a dispatcher entry for each message type of the catalogue', () => {
    const model = buildModel();
    const catalogue = JSON.parse(readFileSync(join(ROOT, 'schemas/v1/messages.json'), 'utf8')).messages.map(
      (m: { type: string }) => m.type,
    );
    expect(model.messages.map((m) => m.type)).toEqual(catalogue);
    expect(new Set(model.messages.map((m) => m.struct)).size).toBe(catalogue.length);
  });
});

describe('TypeScript', () => {
  it('type-checks with tsc --noEmit, keeps the type-discriminated union, and types every valid fixture, extensions and all, as a Message literal (spec: envelope#extensibility)', async () => {
    const dir = await generateInto('ts');
    const model = buildModel();
    // Whole fixtures, unknown members, x- members and open details included: the types are open where the schemas are.
    const fixtures = validFixtures.flatMap((f, i) => {
      const literal = JSON.stringify(JSON.parse(readFileSync(f.path, 'utf8')), null, 2);
      return [`export const f${i}: MessageOf<'${f.type}'> = ${literal};`, `export const m${i}: Message = ${literal};`];
    });
    const cases = model.messages.map((m) => `    case '${m.type}':\n      return 1;`).join('\n');
    writeFileSync(join(dir, 'example.ts'), LANGS.find((l) => l.lang === 'ts')!.example);
    writeFileSync(
      join(dir, 'check.ts'),
      `import type { Message, MessageOf, MessageType, PayloadOf } from './tap-types.ts';
import { isMessageType, MESSAGE_TYPES } from './tap-types.ts';
import { describe } from './example.ts';

${fixtures.join('\n')}

/** A switch on type narrows: each branch sees its own payload, and the default is never reached. */
export function exhaustive(m: Message): number {
  switch (m.type) {
${cases}
    default: {
      const unreachable: never = m;
      return unreachable;
    }
  }
}

export function narrowed(m: Message): string {
  if (m.type === 'task.event') return m.payload.kind;
  if (m.type === 'error') return m.payload.code;
  return m.type;
}

export function wrongMember(m: MessageOf<'task.request'>): string {
  // @ts-expect-error a task.request payload declares no kind: an unknown member is unknown, not a string
  return m.payload.kind;
}

// @ts-expect-error a task.request payload requires capability; a misspelt name does not stand in for it
export const misspelt: PayloadOf<'task.request'> = { capabilty: 'text.summarize', input: {} };

// @ts-expect-error a declared member keeps its type: sequence is a number
export const wrongType: MessageOf<'task.event'>['sequence'] = 'one';

// @ts-expect-error "task.requets" is not a message type
export const typo: MessageType = 'task.requets';
export const capability: PayloadOf<'task.request'>['capability'] = 'text.summarize';
export const all: readonly string[] = MESSAGE_TYPES;
export const known: boolean = isMessageType('ping');
export const said: string = describe(f0);
`,
    );
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          allowImportingTsExtensions: true,
          skipLibCheck: true,
          types: [],
        },
        files: ['check.ts'],
      }),
    );
    run(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], dir);
    // The typed literals, encoded again, are the fixtures they were written from.
    writeFileSync(
      join(dir, 'roundtrip.ts'),
      `import * as typed from './check.ts';\nconst all = typed as Record<string, unknown>;\nfor (let i = 0; i < ${validFixtures.length}; i++) console.log('= ' + JSON.stringify(all[\`f\${i}\`]));\n`,
    );
    expectLossless(run(process.execPath, [join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'), 'roundtrip.ts'], dir));
  }, 120_000);
});

describe('TypeScript unions by a member', () => {
  const schema = (f: string) => JSON.parse(readFileSync(join(ROOT, 'schemas/v1', f), 'utf8'));

  it("types task.event's payload as a union discriminated by kind, one variant per kind of the schema, each requiring what its kind requires", async () => {
    const text = (await generate('ts')).get('tap-types.ts')!;
    const kinds = (schema('task.event.payload.schema.json').properties.kind.anyOf as { const: string }[]).map((b) => b.const);
    expect(kinds.length).toBeGreaterThanOrEqual(4);
    const variants = kinds.map((k) => `TaskEventPayload${k[0]!.toUpperCase()}${k.slice(1)}`);
    expect(text).toContain(`export type TaskEventPayload =\n  ${variants.join(' | ')};`);
    expect(text).toMatch(/export interface TaskEventPayloadLog \{[^}]*kind: 'log';[^}]*\n {2}message: string;/);
    expect(text).toMatch(
      /export interface TaskEventPayloadState \{[^}]*kind: 'state';[^}]*\n {2}state: 'running' \| 'cancelling' \| 'input_required';/,
    );
  });

  it("leaves task.result's payload one object: its rules (a not, an enum in the if) are more than a union by status can say", () => {
    expect(splitOf(schema('task.result.payload.schema.json'))).toBeNull();
    expect(splitOf(schema('task.event.payload.schema.json'))?.member).toBe('kind');
    const event = schema('task.event.payload.schema.json');
    const notOnly = { ...event, allOf: [...event.allOf, { not: { required: ['x'] } }] };
    expect(splitOf(notOnly)).toBeNull();
  });
});

describe('TypeScript and the library', () => {
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const compile = (dir: string) => spawnSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: dir, encoding: 'utf8' });

  it('are one type world: every message, payload, result, event and the card assign both ways without casts, against the built dist/*.d.ts, and a type widened back to string fails to compile', async () => {
    const dir = await generateInto('ts', 'ts-world');
    const catalogue = (JSON.parse(readFileSync(join(ROOT, 'schemas/v1/messages.json'), 'utf8')) as { messages: { type: string }[] })
      .messages;
    const dist = (entry: string) => join(ROOT, 'dist', 'reference', entry, 'index.js');
    writeFileSync(
      join(dir, 'world.ts'),
      typeWorldCheck(
        { main: join(ROOT, 'dist', 'reference', 'index.js'), core: dist('core'), client: dist('client'), generated: './tap-types.ts' },
        catalogue.map((m) => m.type),
      ),
    );
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          allowImportingTsExtensions: true,
          skipLibCheck: true,
          types: ['node'],
          typeRoots: [join(ROOT, 'node_modules', '@types')],
        },
        files: ['world.ts'],
      }),
    );
    // The check compiles clean against the types as generated: the tarball test proves it from the
    // installed package (tools/tarball/peers.ts, "one type world"), so this test compiles only the
    // same check against generated types whose result status is a plain string. Every error it
    // gives must be one the widening can cause (an assignment refused, or an expected error that
    // no longer comes), so that it cannot pass on a check broken otherwise (a missing export or
    // module, a wrong member).
    const generated = readFileSync(join(dir, 'tap-types.ts'), 'utf8');
    const widened = generated.replaceAll("status: 'completed' | 'failed' | 'cancelled' | 'timed_out';", 'status: string;');
    expect(widened).not.toBe(generated);
    writeFileSync(join(dir, 'tap-types.ts'), widened);
    const broken = compile(dir);
    expect(broken.status).not.toBe(0);
    expect(broken.stdout).toMatch(/world\.ts\(\d+,\d+\): error TS2578: Unused '@ts-expect-error' directive/);
    expect(broken.stdout).toMatch(/world\.ts\(\d+,\d+\): error TS2322: Type 'TaskResultPayload' is not assignable/);
    const errors = broken.stdout.split('\n').filter((line) => / error TS\d+:/.test(line));
    expect(errors.filter((line) => !/ error TS(2578|2322):/.test(line))).toEqual([]);
  }, 120_000);
});

describe('Python', () => {
  it.skipIf(lacks('python3'))(
    needing(
      'python3',
      'imports, parses every valid fixture into its class and back losslessly, and refuses the invalid sample, NaN, Infinity and the I-JSON fixtures',
    ),
    async () => {
      const dir = await generateInto('python');
      const sample = invalidSample();
      expect(sample.length).toBeGreaterThan(100);
      writeFileSync(join(dir, 'example.py'), LANGS.find((l) => l.lang === 'python')!.example);
      writeFileSync(join(dir, 'cases.json'), JSON.stringify({ valid: validFixtures, invalid: sample, ijson: iJsonFixtures }));
      writeFileSync(
        join(dir, 'check.py'),
        `import json, sys
import tap_types
from example import describe

cases = json.load(open("cases.json"))
failures = []
for f in cases["valid"]:
    text = open(f["path"]).read()
    obj = json.loads(text)
    try:
        msg = tap_types.parse_message(obj)
    except tap_types.ValidationError as e:
        failures.append(f"refused valid {f['path']}: {e}")
        continue
    if type(msg) is not tap_types.MESSAGE_TYPES[f["type"]] or msg.type != f["type"]:
        failures.append(f"{f['path']} parsed as {type(msg).__name__}")
    if msg.to_dict() != obj:
        failures.append(f"{f['path']} does not round-trip through to_dict")
    print("= " + tap_types.dumps(tap_types.parse_message_json(text)))
    describe(text)
for f in cases["invalid"]:
    try:
        tap_types.parse_message(json.load(open(f["path"])))
        failures.append(f"accepted invalid {f['path']} ({f['why']})")
    except tap_types.ValidationError:
        pass
try:
    tap_types.parse_message({"type": "no.such.type"})
    failures.append("accepted an unknown type")
except tap_types.ValidationError:
    pass
for path in cases["ijson"]:
    try:
        tap_types.parse_message_json(open(path, encoding="utf-8").read())
        failures.append(f"accepted {path}, which is not I-JSON")
    except tap_types.ValidationError:
        pass
for bad in ("NaN", "Infinity", "-Infinity", "1e400"):
    try:
        tap_types.parse_message_json('{"type": "task.event", "payload": {"percent": %s}}' % bad)
        failures.append(f"accepted {bad}")
    except tap_types.ValidationError:
        pass
print("\\n".join(failures))
print(f"checked {len(cases['valid'])} valid and {len(cases['invalid'])} invalid")
sys.exit(1 if failures else 0)
`,
      );
      const out = run('python3', ['check.py'], dir, { PYTHONIOENCODING: 'utf-8' });
      expect(out).toContain(`checked ${validFixtures.length} valid`);
      expect(iJsonFixtures.length).toBeGreaterThanOrEqual(7);
      expectLossless(out);
    },
    120_000,
  );
});

describe('Go', () => {
  it.skipIf(lacks('go'))(
    needing(
      'go',
      'passes go vet and go build, and ParseMessage decodes every valid fixture into its struct and json.Marshal writes it back losslessly',
    ),
    async () => {
      const dir = await generateInto('go');
      const mod = join(scratch, 'gomod');
      mkdirSync(join(mod, 'tap'), { recursive: true });
      writeFileSync(join(mod, 'tap', 'tap_types.go'), readFileSync(join(dir, 'tap_types.go')));
      writeFileSync(join(mod, 'go.mod'), 'module example.com/tapcheck\n\ngo 1.18\n');
      writeFileSync(
        join(mod, 'main.go'),
        `package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"example.com/tapcheck/tap"
)

${LANGS.find((l) => l.lang === 'go')!.example}
func main() {
	for _, path := range os.Args[1:] {
		data, err := os.ReadFile(path)
		if err != nil {
			panic(err)
		}
		msg, err := tap.ParseMessage(data)
		if err != nil {
			fmt.Printf("%s: %v\\n", path, err)
			os.Exit(1)
		}
		if want := filepath.Base(filepath.Dir(path)); msg.MessageType() != want {
			fmt.Printf("%s: parsed as %s\\n", path, msg.MessageType())
			os.Exit(1)
		}
		if _, err := describe(data); err != nil {
			panic(err)
		}
		back, err := json.Marshal(msg)
		if err != nil {
			fmt.Printf("%s: %v\\n", path, err)
			os.Exit(1)
		}
		fmt.Printf("= %s\\n", back)
	}
	if _, err := tap.ParseMessage([]byte(\`{"type":"task.request","payload":{}}\`)); err == nil {
		fmt.Println("accepted a task.request without its required members")
		os.Exit(1)
	}
	fmt.Printf("parsed %d\\n", len(os.Args)-1)
}
`,
      );
      const env = {
        GOFLAGS: '-mod=mod',
        GOCACHE: join(tmpdir(), 'tap-gen-types-gocache'),
        GOPATH: join(tmpdir(), 'tap-gen-types-gopath'),
        GOTOOLCHAIN: 'local',
        CGO_ENABLED: '0',
      };
      expect(run('gofmt', ['-l', 'tap'], mod, env).trim(), 'gofmt would change the generated file').toBe('');
      run('go', ['vet', './...'], mod, env);
      run('go', ['build', '-o', 'check', '.'], mod, env);
      const out = run(
        join(mod, 'check'),
        validFixtures.map((f) => f.path),
        mod,
      );
      expect(out).toContain(`parsed ${validFixtures.length}`);
      expectLossless(out);
    },
    300_000,
  );
});

describe('Rust', () => {
  it('generates a Message enum tagged by type with one variant per message, formatted as rustfmt writes it', async () => {
    const dir = await generateInto('rust');
    const text = readFileSync(join(dir, 'tap_types.rs'), 'utf8');
    if (has('rustfmt')) run('rustfmt', ['--edition', '2021', '--check', join(dir, 'tap_types.rs')], dir);
    else console.warn('gen-types: rustfmt check skipped: rustfmt is not installed');
    expect(text).toContain('#[serde(tag = "type")]\npub enum Message {');
    for (const m of buildModel().messages) expect(text).toContain(`#[serde(rename = "${m.type}")]`);
  });

  it.skipIf(lacks('rust-serde'))(
    needing(
      'rust-serde',
      'builds offline with serde (cargo, Debian crates), parses every valid fixture into its variant and writes it back losslessly',
    ),
    async () => {
      const dir = await generateInto('rust');
      // One crate folder per checkout, kept between runs, whose files are written only when they
      // change: cargo then compiles the crate again exactly when the generated code is new.
      const crate = join(tmpdir(), `tap-gen-types-rscrate-${createHash('sha256').update(ROOT).digest('hex').slice(0, 12)}`);
      mkdirSync(join(crate, 'src'), { recursive: true });
      mkdirSync(join(crate, '.cargo'), { recursive: true });
      writeIfChanged(join(crate, 'src', 'tap_types.rs'), readFileSync(join(dir, 'tap_types.rs'), 'utf8'));
      writeIfChanged(
        join(crate, 'Cargo.toml'),
        '[package]\nname = "tapcheck"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nserde = { version = "1", features = ["derive"] }\nserde_json = "1"\n',
      );
      writeIfChanged(
        join(crate, '.cargo', 'config.toml'),
        `[source.crates-io]\nreplace-with = "debian"\n\n[source.debian]\ndirectory = "${CARGO_REGISTRY}"\n\n[net]\noffline = true\n`,
      );
      writeIfChanged(
        join(crate, 'src', 'main.rs'),
        `pub mod tap_types;

${LANGS.find((l) => l.lang === 'rust')!.example}
fn main() {
    let mut n = 0;
    for path in std::env::args().skip(1) {
        let text = std::fs::read_to_string(&path).expect("read");
        let want = std::path::Path::new(&path).parent().unwrap().file_name().unwrap().to_string_lossy().to_string();
        let msg = tap_types::parse_message(&text).unwrap_or_else(|e| panic!("{}: {}", path, e));
        assert_eq!(msg.message_type(), want, "{}", path);
        println!("= {}", serde_json::to_string(&msg).unwrap());
        describe(&text).unwrap();
        n += 1;
    }
    assert!(tap_types::parse_message(r#"{"type":"task.request","payload":{}}"#).is_err());
    println!("parsed {}", n);
}
`,
      );
      const env = {
        CARGO_TARGET_DIR: join(tmpdir(), 'tap-gen-types-cargo-target'),
        CARGO_HOME: join(tmpdir(), 'tap-gen-types-cargo-home'),
        CARGO_TERM_COLOR: 'never',
      };
      const out = run('cargo', ['run', '--quiet', '--offline', '--', ...validFixtures.map((f) => f.path)], crate, env);
      expect(out).toContain(`parsed ${validFixtures.length}`);
      expectLossless(out);
    },
    600_000,
  );
});
