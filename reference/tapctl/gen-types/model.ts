/**
 * schemas/v1 → a small type model shared by the Python, Go and Rust generators: named object
 * types (one per message schema, payload, shared schema and inline object), string enums,
 * aliases of constrained primitives, and unions. Message schemas are flattened (envelope +
 * their own members) and listed with their `type`, so that each generator can emit one type
 * per message and a dispatcher on `type` (the tagged union the `oneOf` of message.schema.json
 * describes).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packagePath } from '../../package.ts';

export const SCHEMA_DIR = packagePath('schemas/v1');

type Schema = Record<string, unknown>;

/** Validation keywords the generators may check. */
export interface Constraints {
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
}

/** One alternative of a string that may take several forms (e.g. an identifier or "*"). */
export type StringAlternative = Constraints | { const: string };

/**
 * A conditional rule of an object: when member `when` holds one of `values`, the members of
 * `require` must be present, those of `forbid` absent, and (if given) at least one of
 * `requireOne` (an if/then of the schema in a shape the generators can check).
 */
export interface Condition {
  when: string;
  values: unknown[];
  require: string[];
  forbid: string[];
  requireOne: string[];
}

export type TypeRef =
  | { k: 'string'; c: Constraints; alternatives?: StringAlternative[] }
  | { k: 'integer' | 'number'; c: Constraints }
  | { k: 'boolean' | 'any' | 'null' }
  | { k: 'array'; items: TypeRef; c: Constraints }
  | { k: 'map'; values: TypeRef }
  | { k: 'ref'; name: string }
  | { k: 'nullable'; inner: TypeRef };

export interface Field {
  name: string;
  type: TypeRef;
  required: boolean;
  description: string;
}

export type Decl =
  | {
      kind: 'object';
      name: string;
      description: string;
      fields: Field[];
      dependentRequired: Record<string, string[]>;
      conditions: Condition[];
    }
  | { kind: 'enum'; name: string; description: string; values: string[] }
  | { kind: 'alias'; name: string; description: string; type: TypeRef }
  | { kind: 'union'; name: string; description: string; variants: TypeRef[] };

export interface MessageDecl {
  /** The wire type, e.g. "task.request". */
  type: string;
  /** The object declaration of the whole message (envelope members + `type` + payload). */
  struct: string;
  payload: string;
}

export interface Model {
  decls: Decl[];
  messages: MessageDecl[];
}

/** PascalCase of a member or type name: "task.request" → "TaskRequest", "max_message_bytes" → "MaxMessageBytes". */
export function pascal(s: string): string {
  return s
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('');
}

function asSchema(v: unknown): Schema {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Schema) : {};
}

function constraints(s: Schema): Constraints {
  const c: Constraints = {};
  for (const k of ['pattern', 'format', 'minLength', 'maxLength', 'minimum', 'maximum', 'minItems', 'maxItems', 'uniqueItems'] as const) {
    if (s[k] !== undefined) (c as Record<string, unknown>)[k] = s[k];
  }
  return c;
}

/** String literals of a const, an enum, or an anyOf made only of string consts; else null. */
function stringLiterals(s: Schema): string[] | null {
  if (typeof s.const === 'string') return [s.const];
  if (Array.isArray(s.enum) && s.enum.every((v) => typeof v === 'string')) return s.enum as string[];
  const any = s.anyOf as Schema[] | undefined;
  if (Array.isArray(any) && any.length > 0 && any.every((b) => typeof b.const === 'string')) return any.map((b) => b.const as string);
  return null;
}

/** Builds the model from the schema files in `dir`. */
export function buildModel(dir: string = SCHEMA_DIR): Model {
  const files = new Map<string, Schema>();
  for (const f of readdirSync(dir)
    .filter((n) => n.endsWith('.schema.json'))
    .sort())
    files.set(f, JSON.parse(readFileSync(join(dir, f), 'utf8')) as Schema);
  const catalogue = (JSON.parse(readFileSync(join(dir, 'messages.json'), 'utf8')) as { messages: Array<{ type: string }> }).messages.map(
    (m) => m.type,
  );

  const decls = new Map<string, Decl>();
  const byKey = new Map<string, string>();
  const fileDecl = new Map<string, string>();

  /** Adds a declaration, reusing an identical one (same name base and same shape) and renaming a clash. */
  const declare = (decl: Decl, key: string): string => {
    const existing = byKey.get(`${decl.name}\u0000${key}`);
    if (existing) return existing;
    let name = decl.name;
    for (let n = 2; decls.has(name); n++) name = `${decl.name}${n}`;
    decls.set(name, { ...decl, name });
    byKey.set(`${decl.name}\u0000${key}`, name);
    return name;
  };

  const shapeKey = (s: Schema) => JSON.stringify(s, (k, v) => (k === 'description' ? undefined : v));

  /** The type of a schema node; `hint` names the type if it needs a declaration. */
  const typeOf = (node: Schema, hint: string): TypeRef => {
    if (typeof node.$ref === 'string') return { k: 'ref', name: declareFile(node.$ref) };
    const lits = stringLiterals(node);
    if (lits) {
      const name = typeof node.title === 'string' ? node.title : hint;
      return { k: 'ref', name: declare({ kind: 'enum', name, description: String(node.description ?? ''), values: lits }, shapeKey(node)) };
    }
    const any = (node.anyOf ?? node.oneOf) as Schema[] | undefined;
    if (Array.isArray(any)) {
      const nonNull = any.filter((b) => b.type !== 'null');
      if (nonNull.length === 1 && any.length === 2) return { k: 'nullable', inner: typeOf(nonNull[0]!, hint) };
      // A union of string-typed variants (an identifier or "*") is a string.
      if (any.every((b) => stringSchema(b))) {
        const alternatives = any.map((b): StringAlternative => {
          const target = typeof b.$ref === 'string' ? asSchema(files.get(b.$ref)) : b;
          return typeof target.const === 'string' ? { const: target.const } : constraints(target);
        });
        return { k: 'string', c: {}, alternatives };
      }
      const variants = any.map((b, i) => typeOf(b, `${typeof node.title === 'string' ? node.title : hint}${variantName(b, i)}`));
      const name = typeof node.title === 'string' ? node.title : hint;
      return { k: 'ref', name: declare({ kind: 'union', name, description: String(node.description ?? ''), variants }, shapeKey(node)) };
    }
    switch (node.type) {
      case 'string':
      case 'integer':
      case 'number': {
        const t: TypeRef = { k: node.type, c: constraints(node) };
        if (typeof node.title === 'string')
          return {
            k: 'ref',
            name: declare({ kind: 'alias', name: node.title, description: String(node.description ?? ''), type: t }, shapeKey(node)),
          };
        return t;
      }
      case 'boolean':
        return { k: 'boolean' };
      case 'null':
        return { k: 'null' };
      case 'array':
        return { k: 'array', items: typeOf(asSchema(node.items), `${hint}Item`), c: constraints(node) };
      case 'object': {
        if (!node.properties) {
          const values = asSchema(node.additionalProperties ?? Object.values(asSchema(node.patternProperties))[0]);
          return { k: 'map', values: Object.keys(values).length ? typeOf(values, `${hint}Value`) : { k: 'any' } };
        }
        const name = typeof node.title === 'string' ? node.title : hint;
        return { k: 'ref', name: declareObject(node, name) };
      }
      default:
        return { k: 'any' };
    }
  };

  const variantName = (b: Schema, i: number): string => {
    if (typeof b.const === 'string') return pascal(b.const);
    if (typeof b.title === 'string') return b.title;
    if (typeof b.$ref === 'string') return pascal(b.$ref.replace(/\.schema\.json$/, ''));
    const tag = Object.values(asSchema(b.properties)).find((p) => typeof asSchema(p).const === 'string');
    if (tag) return pascal(asSchema(tag).const as string);
    return `Variant${i + 1}`;
  };

  const stringSchema = (b: Schema): boolean => {
    if (typeof b.$ref === 'string') return stringSchema(asSchema(files.get(b.$ref)));
    return b.type === 'string' || typeof b.const === 'string';
  };

  /** Members of an object schema, after merging the object schemas its allOf references. */
  const membersOf = (node: Schema): { properties: Record<string, Schema>; required: string[] } => {
    let properties: Record<string, Schema> = {};
    const required = new Set<string>();
    for (const part of (node.allOf as Schema[] | undefined) ?? []) {
      if (typeof part.$ref === 'string') {
        const m = membersOf(files.get(part.$ref)!);
        properties = { ...properties, ...m.properties };
        m.required.forEach((r) => required.add(r));
      }
    }
    properties = { ...properties, ...(node.properties as Record<string, Schema> | undefined) };
    for (const r of (node.required as string[] | undefined) ?? []) required.add(r);
    return { properties, required: [...required] };
  };

  /** The if/then rules of an object in the shape `if member ∈ values then required / not required / anyOf required`. */
  const conditionsOf = (node: Schema): Condition[] => {
    const out: Condition[] = [];
    for (const part of [...((node.allOf as Schema[] | undefined) ?? []), node]) {
      const cond = asSchema(part.if);
      const then = asSchema(part.then);
      const props = Object.entries(asSchema(cond.properties));
      if (props.length !== 1 || !part.then) continue;
      const [when, test] = props[0]!;
      const t = asSchema(test);
      const values = t.const !== undefined ? [t.const] : Array.isArray(t.enum) ? (t.enum as unknown[]) : null;
      if (!values) continue;
      const forbid = (asSchema(then.not).required as string[] | undefined) ?? [];
      const any = then.anyOf as Schema[] | undefined;
      // An anyOf whose branches are not plain `required` lists is left to schema validation.
      if (
        any &&
        !any.every(
          (b) =>
            Array.isArray(b.required) &&
            (b.required as string[]).length === 1 &&
            Object.values(asSchema(b.properties)).every((p) => Object.keys(asSchema(p)).filter((k) => k !== 'type').length === 0),
        )
      )
        continue;
      if (then.not && Object.keys(asSchema(then.not)).some((k) => k !== 'required' && k !== 'type' && k !== 'properties')) continue;
      out.push({
        when,
        values,
        require: (then.required as string[] | undefined) ?? [],
        forbid,
        requireOne: any ? any.map((b) => (b.required as string[])[0]!) : [],
      });
    }
    return out;
  };

  const declareObject = (node: Schema, name: string): string => {
    const { properties, required } = membersOf(node);
    const key = shapeKey({ properties, required, dependentRequired: node.dependentRequired });
    const existing = byKey.get(`${name}\u0000${key}`);
    if (existing) return existing;
    // Reserve the name before the members, so that member types are named after it.
    const placeholder: Decl = {
      kind: 'object',
      name,
      description: String(node.description ?? ''),
      fields: [],
      dependentRequired: (node.dependentRequired as Record<string, string[]> | undefined) ?? {},
      conditions: conditionsOf(node),
    };
    const finalName = declare(placeholder, key);
    const decl = decls.get(finalName) as Extract<Decl, { kind: 'object' }>;
    decl.fields = Object.entries(properties).map(([prop, s]) => {
      const sub = asSchema(s);
      // A message's `type` is its discriminator; the generators write it from MessageDecl.type.
      if (prop === 'type' && typeof sub.const === 'string')
        return { name: prop, type: { k: 'string', c: {} }, required: required.includes(prop), description: 'The message type.' };
      const field: Field = {
        name: prop,
        type: typeOf(sub, `${finalName}${pascal(prop)}`),
        required: required.includes(prop),
        description: String(sub.description ?? (sub.$ref ? asSchema(files.get(sub.$ref as string)).description : '') ?? ''),
      };
      if (field.name === 'extra') throw new Error(`${finalName}.extra clashes with the generated member that keeps unknown members`);
      return field;
    });
    return finalName;
  };

  function declareFile(file: string): string {
    const known = fileDecl.get(file);
    if (known) return known;
    const s = files.get(file);
    if (!s) throw new Error(`unresolved $ref ${file}`);
    const name = typeof s.title === 'string' ? s.title : pascal(file.replace(/\.schema\.json$/, ''));
    let result: string;
    if (s.type === 'object' && (s.properties || s.allOf)) result = declareObject(s, name);
    else {
      const t = typeOf({ ...s, title: undefined }, name);
      result = t.k === 'ref' ? t.name : declare({ kind: 'alias', name, description: String(s.description ?? ''), type: t }, shapeKey(s));
    }
    fileDecl.set(file, result);
    return result;
  }

  // Shared schemas first (in file order), then payloads and messages in catalogue order.
  const payloadFile = (type: string) => String(asSchema(asSchema(files.get(`${type}.schema.json`)?.properties).payload).$ref);
  const messageFiles = new Set(catalogue.flatMap((t) => [`${t}.schema.json`, payloadFile(t)]));
  for (const f of files.keys()) if (!messageFiles.has(f) && f !== 'message.schema.json' && f !== 'envelope.schema.json') declareFile(f);
  const messages: MessageDecl[] = catalogue.map((type) => {
    const payload = declareFile(payloadFile(type));
    const struct = declareFile(`${type}.schema.json`);
    return { type, struct, payload };
  });
  return { decls: [...decls.values()], messages };
}

/** The declaration of a name. */
export function declOf(model: Model, name: string): Decl {
  const d = model.decls.find((x) => x.name === name);
  if (!d) throw new Error(`no declaration ${name}`);
  return d;
}
