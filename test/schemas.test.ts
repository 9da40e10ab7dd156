import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { discriminated, whenRequires } from '../schemas/src/rules.ts';

const DIR = new URL('../schemas/v1/', import.meta.url).pathname;
const files = readdirSync(DIR).filter((f) => f.endsWith('.schema.json'));
const load = (f: string) => JSON.parse(readFileSync(join(DIR, f), 'utf8'));

function strictAjv() {
  const ajv = new Ajv2020({ strict: true, allErrors: true, discriminator: true, keywords: ['since'] });
  addFormats.default(ajv);
  for (const f of files) ajv.addSchema(load(f));
  return ajv;
}

describe('schemas/v1', () => {
  it('holds one schema per message type in messages.json, and the union', () => {
    const catalogue = JSON.parse(readFileSync(join(DIR, 'messages.json'), 'utf8')).messages as { type: string }[];
    for (const { type } of catalogue) expect(files).toContain(`${type}.schema.json`);
    expect(files).toContain('message.schema.json');
  });

  it.each(files)('%s compiles in Ajv 2020 strict mode with formats', (f) => {
    const ajv = strictAjv();
    const schema = load(f);
    expect(() => ajv.getSchema(schema.$id)).not.toThrow();
    expect(ajv.getSchema(schema.$id)).toBeTypeOf('function');
  });

  it.each(files)('%s has $schema 2020-12, an absolute $id, a title, a description and only relative $refs', (f) => {
    const schema = load(f);
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schema.$id).toMatch(new RegExp(`/v1/${f.replace(/\./g, '\\.')}$`));
    expect(schema.title).toBeTypeOf('string');
    expect(schema.description).toBeTypeOf('string');
    for (const m of JSON.stringify(schema).matchAll(/"\$ref":"([^"]+)"/g)) {
      expect(m[1]).not.toMatch(/^[a-z]+:/);
      expect(files).toContain(m[1]!.split('#')[0]);
    }
  });

  it('never closes an object with additionalProperties: false (spec: envelope#extensibility)', () => {
    for (const f of files) expect(JSON.stringify(load(f))).not.toContain('"additionalProperties":false');
  });

  it('anchors every pattern at both ends, the end as $(?!\\n), so that Python re agrees with ECMA-262 (spec: envelope#identifiers)', () => {
    const patterns = files.flatMap((f) =>
      [...JSON.stringify(load(f)).matchAll(/"pattern":("(?:[^"\\]|\\.)*")/g)].map((m) => [f, JSON.parse(m[1]!) as string]),
    );
    expect(patterns.length).toBeGreaterThan(50);
    for (const [f, p] of patterns) {
      expect(p.startsWith('^'), `${f}: ${p}`).toBe(true);
      expect(p.endsWith('$(?!\\n)'), `${f}: ${p}`).toBe(true);
      expect(new RegExp(p, 'u').test('a\n'), `${f}: ${p}`).toBe(false);
    }
  });

  it('bundle.json holds every schema file under $defs by file name, unchanged but for $schema, and validates a message at its root', () => {
    const bundle = load('bundle.json');
    expect(bundle.$id).toBe('https://schemas.tap-protocol.org/v1/bundle.json');
    expect(bundle.$ref).toBe('message.schema.json');
    expect(Object.keys(bundle.$defs).sort()).toEqual([...files].sort());
    for (const f of files) {
      const { $schema: _, ...rest } = load(f);
      expect(bundle.$defs[f]).toEqual(rest);
    }
  });
});

describe('schemas/src/rules.ts', () => {
  const kinds = { kind: Type.Union([Type.Literal('a'), Type.Literal('b')]), x: Type.Optional(Type.String()) };
  const options = { $id: 'k.schema.json', title: 'K', description: 'A test object.' };

  it('puts the rules in the allOf of the object, and they validate as the schema says', () => {
    const schema = discriminated('kind', kinds, [whenRequires('kind', 'a', { x: { type: 'string' } })], options);
    const validate = new Ajv2020({ strict: true, keywords: ['since'] }).compile(JSON.parse(JSON.stringify(schema)));
    expect(validate({ kind: 'a', x: 'here' })).toBe(true);
    expect(validate({ kind: 'a' })).toBe(false);
    expect(validate({ kind: 'b' })).toBe(true);
  });

  it('refuses a rule keyed on another member, or two rules for one value', () => {
    const other = { if: { properties: { x: { const: 'a' } } }, then: { required: ['x'] } };
    expect(() => discriminated('kind', kinds, [other as never], options)).toThrow(/K: each rule must name its own value of "kind"/);
    const twice = [whenRequires('kind', 'a', { x: {} }), whenRequires('kind', 'a', { x: {} })];
    expect(() => discriminated('kind', kinds, twice, options)).toThrow(/own value of "kind" \(a, a\)/);
  });
});
