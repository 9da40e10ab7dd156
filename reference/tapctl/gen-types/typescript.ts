/**
 * TypeScript through json-schema-to-typescript: the `Message` union of message.schema.json
 * (discriminated by `type`) and every shared schema, in one file, with repeated declarations of
 * the same inline schema (MessageId1, MessageId2 …) folded into one, and generic types that pick a
 * message or payload type by its `type`. Object types are open, as the schemas are: an unknown
 * member is `unknown`, while declared members keep their types and required ones stay required.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SCHEMA_DIR } from './model.ts';

const ROOT_NAME = 'TapSchemaIndex';

/** One top-level declaration of the generated text: its leading comment and body. */
interface Chunk {
  name: string | null;
  text: string;
}

function chunks(text: string): Chunk[] {
  const parts = text.split(/\n(?=\/\*\*\n|export )/);
  const out: Chunk[] = [];
  let pending = '';
  for (const part of parts) {
    if (part.startsWith('/**') && !/\*\/\s*\nexport /.test(part)) {
      pending += `${part}\n`;
      continue;
    }
    const m = /export (?:type|interface) ([A-Za-z0-9_]+)/.exec(part);
    out.push({ name: m ? m[1]! : null, text: pending + part });
    pending = '';
  }
  if (pending) out.push({ name: null, text: pending });
  return out;
}

/** Folds `Foo2` into `Foo` when their bodies are equal after renaming, until nothing changes. */
export function foldDuplicates(text: string): string {
  for (;;) {
    const list = chunks(text);
    const byName = new Map(list.filter((c) => c.name).map((c) => [c.name!, c]));
    const body = (c: Chunk) =>
      c.text
        .replace(/^\/\*\*[\s\S]*?\*\/\s*/, '')
        .replace(new RegExp(`\\b${c.name}\\b`), '§')
        .trim();
    let renamed: [string, string] | null = null;
    for (const c of list) {
      const m = c.name ? /^(.*?[A-Za-z])(\d+)$/.exec(c.name) : null;
      if (!m) continue;
      const base = byName.get(m[1]!);
      if (base && body(base) === body(c)) {
        renamed = [c.name!, m[1]!];
        break;
      }
    }
    if (!renamed) return text;
    const [from, to] = renamed;
    text = list
      .filter((c) => c.name !== from)
      .map((c) => c.text)
      .join('\n')
      .replace(new RegExp(`\\b${from}\\b`, 'g'), to);
  }
}

type Schema = Record<string, unknown>;

const SHAPE_KEYWORDS = ['type', '$ref', 'anyOf', 'oneOf', 'allOf', 'const', 'enum', 'properties', 'items', 'not', 'if'];

/**
 * A schema prepared for the TypeScript generator: a schema that allows any JSON value (no type
 * or shape keyword, e.g. a task's `input`) is marked `tsType: unknown`, which the generator
 * would otherwise render as an object type.
 */
export function prepareForTs(node: unknown): unknown {
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return node;
  const s = { ...(node as Schema) };
  if (!SHAPE_KEYWORDS.some((k) => k in s)) s.tsType = 'unknown';
  const map = (v: unknown) => Object.fromEntries(Object.entries(v as Schema).map(([k, x]) => [k, prepareForTs(x)]));
  for (const k of ['properties', 'patternProperties', 'dependentSchemas'] as const) if (s[k]) s[k] = map(s[k]);
  for (const k of ['items', 'not', 'if', 'then', 'else', 'additionalProperties'] as const)
    if (s[k] && typeof s[k] === 'object') s[k] = prepareForTs(s[k]);
  for (const k of ['anyOf', 'oneOf', 'allOf'] as const) if (Array.isArray(s[k])) s[k] = (s[k] as unknown[]).map(prepareForTs);
  return s;
}

/**
 * Reads one schema file for the generator. The envelope's `payload` (any object) is typed
 * `object`: as an index signature it would widen every message's own payload type in the
 * `Envelope & { payload: … }` intersection, so that a misspelt member would type-check.
 */
function prepareFile(path: string): unknown {
  const s = prepareForTs(JSON.parse(readFileSync(path, 'utf8'))) as Schema;
  if (path.endsWith('/envelope.schema.json')) {
    const props = s.properties as Record<string, Schema>;
    props.payload = { ...props.payload, tsType: 'object' };
  }
  return s;
}

/** `Message` as a plain union of the message types. */
function messageUnion(catalogueStructs: string[]): string {
  return `/**\n * Any TAP 1.0 message, discriminated by \`type\`.\n */\nexport type Message =\n${catalogueStructs.map((s) => `  | ${s}`).join('\n')};\n`;
}

/** Generates `tap-types.ts`. */
export async function generateTypeScript(dir: string = SCHEMA_DIR): Promise<Map<string, string>> {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.schema.json'))
    .sort();
  const catalogue = (JSON.parse(readFileSync(join(dir, 'messages.json'), 'utf8')) as { messages: Array<{ type: string }> }).messages.map(
    (m) => m.type,
  );
  const isMessageFile = (f: string) => catalogue.some((t) => f === `${t}.schema.json` || f === `${t}.payload.schema.json`);
  const shared = files.filter((f) => !isMessageFile(f) && f !== 'message.schema.json');
  // One root that references the message union and every shared schema, so that all names come from one compilation.
  const root = {
    title: ROOT_NAME,
    type: 'object',
    properties: Object.fromEntries([
      ['message', { $ref: 'message.schema.json' }],
      ...shared.map((f) => [f.replace(/\.schema\.json$/, ''), { $ref: f }]),
    ]),
    additionalProperties: true,
  };
  // The compiler is loaded only when TypeScript types are generated.
  const { compile } = await import('json-schema-to-typescript');
  const raw = await compile(root as never, ROOT_NAME, {
    cwd: dir,
    bannerComment: '',
    // The schemas are open (spec: envelope#extensibility): every object type keeps
    // `[k: string]: unknown`, so x- members, later minors' members and open details type-check.
    additionalProperties: true,
    declareExternallyReferenced: true,
    unreachableDefinitions: false,
    format: true,
    style: { singleQuote: true, printWidth: 120 },
    $refOptions: {
      resolve: {
        http: false,
        file: { order: 1, canRead: true, read: (file: { url: string }) => JSON.stringify(prepareFile(file.url)) },
      },
    } as never,
  });
  const union = messageUnion(
    ((JSON.parse(readFileSync(join(dir, 'message.schema.json'), 'utf8')) as Schema).oneOf as Array<{ $ref: string }>).map((b) =>
      String((JSON.parse(readFileSync(join(dir, b.$ref), 'utf8')) as Schema).title),
    ),
  );
  // The generator writes Message as `{ type: string } & (A | B …)`; a plain union keeps Extract<> and narrowing simple.
  const withoutRoot = chunks(raw)
    .filter((c) => c.name !== ROOT_NAME)
    .map((c) => (c.name === 'Message' ? union : c.text))
    .join('\n')
    // The generator's note on index signatures names no schema here; it only adds noise.
    .replace(/ *\/\*\*\n *\* This interface was referenced by [^\n]*\n *\* via the [^\n]*\n *\*\/\n/g, '');
  const text = `/**
 * TAP 1.0 message types, generated from schemas/v1 by \`tapctl gen-types --lang ts\`. Do not edit.
 *
 * \`Message\` is the union of every message type, discriminated by \`type\`: a \`switch (msg.type)\`
 * narrows it. \`MessageOf<'task.request'>\` and \`PayloadOf<'task.request'>\` pick one type.
 */

${foldDuplicates(withoutRoot).trim()}

/** Every message type of TAP 1.0, in catalogue order. */
export const MESSAGE_TYPES = [${catalogue.map((t) => `'${t}'`).join(', ')}] as const;

/** A message type, e.g. 'task.request'. */
export type MessageType = (typeof MESSAGE_TYPES)[number];

/** The message whose \`type\` is T. */
export type MessageOf<T extends MessageType> = Extract<Message, { type: T }>;

/** The payload of the message whose \`type\` is T. */
export type PayloadOf<T extends MessageType> = MessageOf<T>['payload'];

/** Whether a string names a message type of TAP 1.0. */
export function isMessageType(type: string): type is MessageType {
  return (MESSAGE_TYPES as readonly string[]).includes(type);
}
`;
  return new Map([['tap-types.ts', text]]);
}
