/**
 * JSON Schema → a readable field table: one row per member (nested inline objects and array
 * items as dotted paths), with its type, whether it is required, its constraints and its
 * description. `$ref`s are followed; a reference to a shared schema (agent card, plan …)
 * becomes a link to that schema's own table instead of being repeated.
 */
import { esc } from './html.ts';
import type { Schema } from './sources.ts';

export interface FieldRow {
  /** Dotted path: `authorization.permissions[]`. */
  path: string;
  depth: number;
  /** HTML of the type cell. */
  type: string;
  /** "required", "optional" or another word given by the caller (e.g. "absent"). */
  presence: string;
  /** HTML snippets, one per constraint. */
  constraints: string[];
  description: string;
}

export interface FieldContext {
  schemas: Map<string, Schema>;
  /** The href of a schema file's own table (for shared schemas), or null to expand it inline. */
  linkFor(file: string): string | null;
}

/** The largest safe integer, the schemas' upper bound for counts: not worth showing. */
const SAFE_MAX = 9007199254740991;

function asSchema(v: unknown): Schema | null {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Schema) : null;
}

/** Follows a `$ref` to a file of schemas/v1 (relative file names only). */
export function deref(node: Schema, ctx: FieldContext): { schema: Schema; file: string | null } {
  const ref = node.$ref;
  if (typeof ref === 'string') {
    const target = ctx.schemas.get(ref);
    if (!target) throw new Error(`unresolved $ref ${ref}`);
    return { schema: target, file: ref };
  }
  return { schema: node, file: null };
}

/** The constraints of a node as short HTML snippets. */
export function constraintsOf(s: Schema): string[] {
  const out: string[] = [];
  if (typeof s.pattern === 'string') out.push(`pattern <code>${esc(s.pattern)}</code>`);
  if (typeof s.format === 'string') out.push(`format <code>${esc(s.format)}</code>`);
  const minL = s.minLength as number | undefined;
  const maxL = s.maxLength as number | undefined;
  if (minL !== undefined && maxL !== undefined) out.push(`length ${minL}–${maxL}`);
  else if (minL !== undefined) out.push(`length ≥ ${minL}`);
  else if (maxL !== undefined) out.push(`length ≤ ${maxL}`);
  const min = s.minimum as number | undefined;
  const max = s.maximum as number | undefined;
  if (min !== undefined && max !== undefined && max !== SAFE_MAX) out.push(`${min} ≤ value ≤ ${max}`);
  else if (min !== undefined) out.push(`≥ ${min}`);
  else if (max !== undefined && max !== SAFE_MAX) out.push(`≤ ${max}`);
  if (typeof s.minItems === 'number') out.push(`at least ${s.minItems} item${s.minItems === 1 ? '' : 's'}`);
  if (typeof s.maxItems === 'number') out.push(`at most ${s.maxItems} items`);
  return out;
}

/** Literal values of a const or of an anyOf made only of consts / an enum, else null. */
export function literalsOf(s: Schema): unknown[] | null {
  if ('const' in s) return [s.const];
  if (Array.isArray(s.enum)) return s.enum as unknown[];
  const any = s.anyOf as Schema[] | undefined;
  if (Array.isArray(any) && any.length > 0 && any.every((b) => 'const' in b)) return any.map((b) => b.const);
  return null;
}

function literalHtml(values: unknown[]): string {
  return values.map((v) => `<code>${esc(JSON.stringify(v))}</code>`).join(' | ');
}

/** True when the object allows any members and declares none. */
function isOpenMap(s: Schema): boolean {
  return s.type === 'object' && !s.properties && s.additionalProperties !== false;
}

/** The type cell for a node, plus the inline object (if any) whose members become child rows. */
function typeOf(node: Schema, ctx: FieldContext): { html: string; expand: Schema | null; schema: Schema; linked?: boolean } {
  const { schema, file } = deref(node, ctx);
  if (file) {
    const href = ctx.linkFor(file);
    const name = esc((schema.title as string | undefined) ?? file);
    if (href) {
      const base = schema.type === 'object' ? '' : `${esc(String(schema.type ?? ''))} `;
      return { html: `${base}<a href="${esc(href)}">${name}</a>`, expand: null, schema, linked: true };
    }
  }
  const title = typeof schema.title === 'string' ? ` <span class="t-title">${esc(schema.title)}</span>` : '';
  const lits = literalsOf(schema);
  if (lits) return { html: literalHtml(lits), expand: null, schema };
  const any = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (Array.isArray(any)) {
    const parts = any.map((b) => typeOf(b, ctx));
    const objects = parts.filter((p) => p.expand);
    return { html: parts.map((p) => p.html).join(' | ') + title, expand: objects.length === 1 ? objects[0]!.expand : null, schema };
  }
  switch (schema.type) {
    case 'array': {
      const items = asSchema(schema.items);
      if (!items) return { html: 'array', expand: null, schema };
      const inner = typeOf(items, ctx);
      return { html: `array of ${inner.html}`, expand: inner.expand, schema };
    }
    case 'object':
      if (schema.properties) return { html: `object${title}`, expand: schema, schema };
      return {
        html: isOpenMap(schema) ? `object${title} <span class="t-note">(any members)</span>` : `object${title}`,
        expand: null,
        schema,
      };
    case undefined:
      return { html: '<span class="t-any">any JSON value</span>', expand: null, schema };
    case 'null':
      return { html: '<code>null</code>', expand: null, schema };
    default:
      return { html: `${esc(String(schema.type))}${title}`, expand: null, schema };
  }
}

/** Rows for the members of an object schema (after following `$ref` and flattening `allOf` refs). */
export function fieldRows(
  objectSchema: Schema,
  ctx: FieldContext,
  options: { prefix?: string; depth?: number; presence?: (name: string, required: boolean) => string } = {},
): FieldRow[] {
  const { schema } = deref(objectSchema, ctx);
  const properties = { ...mergedProperties(schema, ctx) };
  const required = new Set(mergedRequired(schema, ctx));
  const rows: FieldRow[] = [];
  const prefix = options.prefix ?? '';
  const depth = options.depth ?? 0;
  for (const [name, raw] of Object.entries(properties)) {
    const node = asSchema(raw) ?? {};
    const t = typeOf(node, ctx);
    const isArray = t.schema.type === 'array';
    const path = `${prefix}${name}`;
    const lits = literalsOf(t.schema);
    const description = String(
      node.description ?? t.schema.description ?? (lits?.length === 1 ? `Always ${JSON.stringify(lits[0])}.` : ''),
    );
    const req = required.has(name);
    rows.push({
      path,
      depth,
      type: t.html,
      presence: options.presence ? options.presence(name, req) : req ? 'required' : 'optional',
      // A linked schema states its own constraints on its own table.
      constraints: t.linked ? [] : [...constraintsOf(t.schema), ...(isArray ? itemConstraints(asSchema(t.schema.items) ?? {}, ctx) : [])],
      description,
    });
    if (t.expand) rows.push(...fieldRows(t.expand, ctx, { prefix: `${path}${isArray ? '[]' : ''}.`, depth: depth + 1 }));
  }
  return rows;
}

/** Constraints of an array's items, unless the items are a linked schema with a table of its own. */
function itemConstraints(items: Schema, ctx: FieldContext): string[] {
  if (typeof items.$ref === 'string' && ctx.linkFor(items.$ref)) return [];
  return constraintsOf(deref(items, ctx).schema).map((c) => `each: ${c}`);
}

/** Properties of a schema including those of the schemas its `allOf` references. */
export function mergedProperties(schema: Schema, ctx: FieldContext): Record<string, unknown> {
  let out: Record<string, unknown> = {};
  for (const part of (schema.allOf as Schema[] | undefined) ?? []) {
    if (typeof part.$ref === 'string') out = { ...out, ...mergedProperties(deref(part, ctx).schema, ctx) };
  }
  return { ...out, ...((schema.properties as Record<string, unknown> | undefined) ?? {}) };
}

/** Required members of a schema including those of the schemas its `allOf` references. */
export function mergedRequired(schema: Schema, ctx: FieldContext): string[] {
  const out = new Set<string>();
  for (const part of (schema.allOf as Schema[] | undefined) ?? []) {
    if (typeof part.$ref === 'string') for (const r of mergedRequired(deref(part, ctx).schema, ctx)) out.add(r);
  }
  for (const r of (schema.required as string[] | undefined) ?? []) out.add(r);
  return [...out];
}

/** Renders field rows as an HTML table. */
export function fieldTable(rows: FieldRow[], caption?: string): string {
  const body = rows
    .map((r) => {
      const name = r.path.split('.').pop()!;
      const parent = r.path.slice(0, r.path.length - name.length);
      return (
        `<tr class="presence-${esc(r.presence)}"><td class="f-name" style="--depth:${r.depth}">` +
        `${parent ? `<span class="f-parent">${esc(parent)}</span>` : ''}<code>${esc(name)}</code></td>` +
        `<td class="f-type">${r.type}</td><td class="f-req"><span class="presence">${esc(r.presence)}</span></td>` +
        `<td class="f-desc">${esc(r.description)}${r.constraints.length ? `<div class="f-cons">${r.constraints.join('<span class="sep"> · </span>')}</div>` : ''}</td></tr>`
      );
    })
    .join('\n');
  return (
    `<div class="table-wrap"><table class="fields">${caption ? `<caption>${esc(caption)}</caption>` : ''}\n` +
    `<thead><tr><th>Field</th><th>Type</th><th>Presence</th><th>Description and constraints</th></tr></thead>\n<tbody>\n${body}\n</tbody></table></div>`
  );
}

/** Plain-language statements of a schema's conditional rules (`if`/`then`, `dependentRequired`). */
export function conditionalRules(schema: Schema): string[] {
  const rules: string[] = [];
  const code = (s: string) => `<code>${esc(s)}</code>`;
  const list = (xs: string[]) => xs.map(code).join(', ');
  for (const [key, deps] of Object.entries((schema.dependentRequired as Record<string, string[]> | undefined) ?? {})) {
    rules.push(`When ${code(key)} is present, ${list(deps)} ${deps.length === 1 ? 'is' : 'are'} required too.`);
  }
  const conditions = [...((schema.allOf as Schema[] | undefined) ?? []), schema].filter((s) => s.if && s.then);
  for (const c of conditions) {
    const cond = c.if as Schema;
    const props = Object.entries((cond.properties as Record<string, Schema> | undefined) ?? {});
    const when = props
      .map(([k, v]) => {
        const lits = literalsOf(v);
        return lits ? `${code(k)} is ${lits.map((l) => code(JSON.stringify(l))).join(' or ')}` : `${code(k)} matches its condition`;
      })
      .join(' and ');
    const then = c.then as Schema;
    const parts: string[] = [];
    const req = (then.required as string[] | undefined) ?? [];
    if (req.length) parts.push(`${list(req)} ${req.length === 1 ? 'is' : 'are'} required`);
    const not = then.not as Schema | undefined;
    if (not?.required) parts.push(`${list(not.required as string[])} must be absent`);
    const any = then.anyOf as Schema[] | undefined;
    if (any) {
      const options = any.map((b) => {
        if (b.required) {
          const inner = Object.entries((b.properties as Record<string, Schema> | undefined) ?? {})
            .map(([k, v]) => {
              const nested = Object.entries((v.properties as Record<string, Schema> | undefined) ?? {}).map(([nk, nv]) => {
                const l = literalsOf(nv);
                return l ? ` with ${code(`${k}.${nk}`)} ${l.map((x) => code(JSON.stringify(x))).join(' or ')}` : '';
              });
              return nested.join('');
            })
            .join('');
          return `${list(b.required as string[])} present${inner}`;
        }
        if (b.not) {
          const alts = ((b.not as Schema).anyOf as Schema[] | undefined)?.flatMap((x) => (x.required as string[] | undefined) ?? []) ?? [];
          return alts.length ? `none of ${list(alts)}` : 'the alternative';
        }
        return 'the alternative';
      });
      parts.push(`one of: ${options.join('; or ')}`);
    }
    for (const [k, v] of Object.entries((then.properties as Record<string, Schema> | undefined) ?? {})) {
      if (v.type && !req.includes(k)) parts.push(`${code(k)} is a ${esc(String(v.type))}`);
    }
    if (when && parts.length) rules.push(`When ${when}: ${parts.join('; ')}.`);
  }
  return rules;
}
