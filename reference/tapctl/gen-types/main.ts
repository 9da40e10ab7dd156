/**
 * gen-types: types for other languages from schemas/v1 (and nothing else).
 *
 *   npx tapctl gen-types --lang <ts|python|go|rust> --out <dir>
 *
 * Also `npm run gen:types` (tools/gen-types/main.ts, for the sources of a clone). Each language gets one type per message
 * and a dispatcher on `type`, so the message union stays a tagged union.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { generateGo } from './go.ts';
import { buildModel } from './model.ts';
import { generatePython } from './python.ts';
import { generateRust } from './rust.ts';
import { generateTypeScript } from './typescript.ts';

export type Lang = 'ts' | 'python' | 'go' | 'rust';

/** What each language gets; the site's "Generated types" page and the README read this. */
export interface LangInfo {
  lang: Lang;
  name: string;
  /** The file the generator writes. */
  file: string;
  summary: string;
  needs: string;
  /** A short use of the generated code (the tests compile or run it). */
  example: string;
}

export const LANGS: readonly LangInfo[] = [
  {
    lang: 'ts',
    name: 'TypeScript',
    file: 'tap-types.ts',
    summary:
      "`Message`, the union of every message discriminated by `type` (a `switch (msg.type)` narrows it), one type per message, payload and shared schema, task events a union discriminated by `kind`, and `MessageOf<T>` / `PayloadOf<T>`; each assigns to the library's type of the same name, and back.",
    needs: 'TypeScript 4.9 or later; no runtime dependency.',
    example: `import type { Message } from './tap-types.ts';

export function describe(msg: Message): string {
  switch (msg.type) {
    case 'task.request':
      return \`task \${msg.task_id} asks for \${msg.payload.capability}\`;
    case 'task.result':
      return \`task \${msg.task_id} ended \${msg.payload.status}\`;
    default:
      return msg.type;
  }
}
`,
  },
  {
    lang: 'python',
    name: 'Python',
    file: 'tap_types.py',
    summary:
      "One dataclass per message, payload and shared schema, each with `from_dict` and `to_dict` (unknown members kept in `extra`), `parse_message(obj)`, which dispatches on `type`, checks required members, types, enums and simple constraints, and returns the message's class, `parse_message_json(text)`, which first refuses text that is not I-JSON (`NaN`, `Infinity`, unsafe integers, lone surrogates), and `dumps(msg)`.",
    needs: 'Python 3.10 or later; standard library only.',
    example: `from tap_types import TaskRequestMessage, ValidationError, parse_message_json


def describe(line: str) -> str:
    try:
        msg = parse_message_json(line)
    except ValidationError as e:
        return f"refused: {e}"
    if isinstance(msg, TaskRequestMessage):
        return f"task {msg.task_id} asks for {msg.payload.capability}"
    return msg.type
`,
  },
  {
    lang: 'go',
    name: 'Go',
    file: 'tap_types.go',
    summary:
      "One struct per message, payload and shared schema with `json` tags, a `Message` interface, and `ParseMessage([]byte)`, which switches on `type`, checks required members and decodes into the message's struct; each struct keeps unknown members in `Extra` and `json.Marshal` writes them back.",
    needs: 'Go 1.18 or later; standard library only. `--package` sets the package name (default `tap`).',
    example: `func describe(line []byte) (string, error) {
	msg, err := tap.ParseMessage(line)
	if err != nil {
		return "", err
	}
	switch m := msg.(type) {
	case *tap.TaskRequestMessage:
		return fmt.Sprintf("task %s asks for %s", m.TaskID, m.Payload.Capability), nil
	default:
		return msg.MessageType(), nil
	}
}
`,
  },
  {
    lang: 'rust',
    name: 'Rust',
    file: 'tap_types.rs',
    summary:
      'One struct per message, payload and shared schema, and `Message`, an enum tagged by `type` (`#[serde(tag = "type")]`), with `parse_message(&str)`; unknown members are kept in `extra` and numbers as `serde_json::Number`, so integers stay integers.',
    needs: 'serde (with the `derive` feature) and serde_json.',
    example: `fn describe(line: &str) -> Result<String, serde_json::Error> {
    Ok(match tap_types::parse_message(line)? {
        tap_types::Message::TaskRequest(m) => format!("task {} asks for {}", m.task_id, m.payload.capability),
        other => other.message_type().to_string(),
    })
}
`,
  },
];

/** The one command that generates the types of a language. */
export function commandFor(lang: Lang, out = `./tap-types-${lang}`): string {
  return `npx tapctl gen-types --lang ${lang} --out ${out}`;
}

/** The generated files of a language: file name → text. */
export async function generate(lang: Lang, options: { goPackage?: string } = {}): Promise<Map<string, string>> {
  switch (lang) {
    case 'ts':
      return generateTypeScript();
    case 'python':
      return generatePython(buildModel());
    case 'go':
      return generateGo(buildModel(), options.goPackage);
    case 'rust':
      return generateRust(buildModel());
  }
}

/** The help text of the command; `program` is how it was invoked. */
export function usage(program = 'gen-types'): string {
  return `Usage: ${program} --lang <ts|python|go|rust> --out <dir> [--package <name>]

Generates types for TAP 1.0 messages from the JSON Schemas in schemas/v1: one type per
message, payload and shared schema, and a dispatcher on "type".

Options:
  --lang <lang>      ts, python, go or rust
  --out <dir>        the folder to write into (created if missing)
  --package <name>   Go only: the package name (default tap)
  -h, --help         show this help

Example:
  ${program} --lang python --out ./tap-types
`;
}

export type GenTypesArgs =
  | { ok: true; help: true }
  | { ok: true; help: false; lang: Lang; out: string; goPackage?: string }
  | { ok: false; error: string; hint: string };

/** Reads the command line of gen-types; a bad one gives what was wrong and what to do. */
export function parseGenTypesArgs(argv: string[]): GenTypesArgs {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { lang: { type: 'string' }, out: { type: 'string' }, package: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      allowPositionals: false,
    }));
  } catch (e) {
    return { ok: false, error: (e as Error).message, hint: `e.g. ${commandFor('python')}` };
  }
  if (values.help) return { ok: true, help: true };
  const langs = LANGS.map((l) => l.lang) as string[];
  if (!values.lang || !langs.includes(values.lang)) {
    return {
      ok: false,
      error: values.lang ? `--lang ${values.lang} is not one of ${langs.join(', ')}` : '--lang is missing',
      hint: `Give one of ${langs.join(', ')}, e.g. --lang python.`,
    };
  }
  if (!values.out)
    return {
      ok: false,
      error: '--out is missing',
      hint: `Give the folder to write the ${values.lang} types into, e.g. --out ./tap-types.`,
    };
  if (values.package !== undefined && (values.lang !== 'go' || !/^[a-z][a-z0-9_]*$/.test(values.package))) {
    return {
      ok: false,
      error: `--package ${values.package} is not usable here`,
      hint: '--package is for --lang go and takes a Go package name: lowercase letters, digits and "_".',
    };
  }
  return { ok: true, help: false, lang: values.lang as Lang, out: values.out, goPackage: values.package };
}

/** Generates the types of `lang` into `out` (created if missing); returns the paths written. */
export async function writeTypes(lang: Lang, out: string, options: { goPackage?: string } = {}): Promise<string[]> {
  const files = await generate(lang, options);
  mkdirSync(resolve(out), { recursive: true });
  const written: string[] = [];
  for (const [name, text] of files) {
    writeFileSync(join(resolve(out), name), text);
    written.push(join(out, name));
  }
  return written;
}

/** Runs the command; returns the exit status (0 written, 1 failed, 2 usage error). */
export async function runGenTypes(
  argv: string[],
  out: (s: string) => void = (s) => process.stdout.write(s),
  err: (s: string) => void = (s) => process.stderr.write(s),
): Promise<number> {
  const args = parseGenTypesArgs(argv);
  if (!args.ok) {
    err(`gen-types: ${args.error}\n  ${args.hint}\n  Run gen-types --help for usage.\n`);
    return 2;
  }
  if (args.help) {
    out(usage());
    return 0;
  }
  try {
    for (const path of await writeTypes(args.lang, args.out, { goPackage: args.goPackage })) out(`wrote ${path}\n`);
    return 0;
  } catch (e) {
    err(`gen-types: could not write the ${args.lang} types into ${args.out}: ${(e as Error).message}\n`);
    return 1;
  }
}
