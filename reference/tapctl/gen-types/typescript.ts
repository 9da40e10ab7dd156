/**
 * TypeScript through json-schema-to-typescript: the `Message` union of message.schema.json
 * (discriminated by `type`) and every shared schema, in one file, with repeated declarations of
 * the same inline schema (MessageId1, MessageId2 …) folded into one, and generic types that pick a
 * message or payload type by its `type`. Object types are open, as the schemas are: an unknown
 * member is `unknown`, while declared members keep their types and required ones stay required.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MissingPeerError, optionalImport, TYPESCRIPT_GENERATOR_PEER } from '../../peers.ts';
import { pascal, SCHEMA_DIR } from './model.ts';

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

/** An object schema split into a union by one member: the member, and what each of its values requires. */
interface Split {
  member: string;
  /** Per value of the member, the sets of members that may complete it (one set: all required; several: any one of them). */
  cases: Map<string, string[][]>;
}

const asSchema = (v: unknown): Schema => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Schema) : {});
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');

/** The string values a member schema allows: a const, an enum, or an anyOf of string consts; else null. */
function stringValues(s: Schema): string[] | null {
  if (typeof s.const === 'string') return [s.const];
  if (isStrings(s.enum)) return s.enum;
  const any = s.anyOf;
  if (Array.isArray(any) && any.length > 0 && any.every((b) => typeof asSchema(b).const === 'string'))
    return any.map((b) => asSchema(b).const as string);
  return null;
}

/**
 * How an object schema splits into a union discriminated by one member, or null. It splits when
 * its allOf holds only if/then rules, each `if` requiring one member to hold one string const, all
 * on the same required member of string values, and each `then` requiring members (`required`) or
 * one of several sets of them (an `anyOf` of `required`): a type can say exactly that. Rules of
 * any other shape (a `not`, an `enum` in the `if`, as task.result's have) leave the object whole.
 */
export function splitOf(s: Schema): Split | null {
  const rules = s.allOf;
  const props = asSchema(s.properties);
  if (s.type !== 'object' || !Array.isArray(rules) || rules.length === 0) return null;
  let member: string | undefined;
  const cases = new Map<string, string[][]>();
  for (const rule of rules.map(asSchema)) {
    const cond = Object.entries(asSchema(asSchema(rule.if).properties));
    const then = asSchema(rule.then);
    if (Object.keys(rule).sort().join() !== 'if,then' || cond.length !== 1) return null;
    const [name, test] = cond[0]!;
    const value = asSchema(test).const;
    if (typeof value !== 'string' || (member !== undefined && name !== member) || cases.has(value)) return null;
    member = name;
    const sets = Array.isArray(then.anyOf) ? then.anyOf.map((b) => asSchema(b).required) : [then.required];
    const extra = Object.keys(then).filter((k) => !['type', 'properties', 'required', 'anyOf'].includes(k));
    if (extra.length > 0 || !sets.every(isStrings) || (then.anyOf && then.required)) return null;
    cases.set(value, sets as string[][]);
  }
  const values =
    member !== undefined && isStrings(s.required) && s.required.includes(member) ? stringValues(asSchema(props[member])) : null;
  if (!values || [...cases.keys()].some((v) => !values.includes(v))) return null;
  for (const v of values) if (!cases.has(v)) cases.set(v, [[]]);
  return { member: member!, cases: new Map(values.map((v) => [v, cases.get(v)!])) };
}

/**
 * The union an object schema splits into (see `splitOf`): one titled variant per value of the
 * member, holding every member of the object with the discriminator fixed to that value and the
 * members the value requires required; a value that requires one of several sets of members is
 * itself a union of one object per set.
 */
function splitSchema(s: Schema, split: Split): Schema {
  const { allOf, properties, required, ...rest } = s;
  const props = asSchema(properties);
  const title = String(s.title);
  const variants = [...split.cases].map(([value, sets]) => {
    const object = (set: string[]): Schema => ({
      type: 'object',
      properties: { ...props, [split.member]: { description: asSchema(props[split.member]).description, const: value } },
      required: [...new Set([...(required as string[]), ...set])],
    });
    const head = { title: `${title}${pascal(value)}`, description: `${title} whose ${split.member} is "${value}".` };
    return sets.length === 1 ? { ...head, ...object(sets[0]!) } : { ...head, anyOf: sets.map(object) };
  });
  const { type, ...keep } = rest;
  return { ...keep, anyOf: variants };
}

/**
 * Reads one schema file for the generator. The envelope's `payload` (any object) is typed
 * `object`: as an index signature it would widen every message's own payload type in the
 * `Envelope & { payload: … }` intersection, so that a misspelt member would type-check.
 */
function prepareFile(path: string): unknown {
  let s = prepareForTs(JSON.parse(readFileSync(path, 'utf8'))) as Schema;
  if (path.endsWith('/envelope.schema.json')) {
    const props = s.properties as Record<string, Schema>;
    props.payload = { ...props.payload, tsType: 'object' };
  }
  const split = splitOf(s);
  if (split) s = splitSchema(s, split);
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
  // The compiler, an optional peer dependency, is loaded only when TypeScript types are generated.
  const generator = await optionalImport(() => import('json-schema-to-typescript'));
  if (!generator) throw new MissingPeerError('tapctl gen-types --lang ts', [TYPESCRIPT_GENERATOR_PEER]);
  const { compile } = generator;
  const raw = await compile(root as never, ROOT_NAME, {
    cwd: dir,
    bannerComment: '',
    // The schemas are open (spec: envelope#extensibility): every object type keeps
    // `[k: string]: unknown`, so x- members, later minors' members and open details type-check.
    additionalProperties: true,
    // minItems and maxItems stay validation, as patterns and lengths do: arrays are arrays, not tuples.
    ignoreMinAndMaxItems: true,
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
