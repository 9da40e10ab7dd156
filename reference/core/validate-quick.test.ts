import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isKnownType } from './catalogue.ts';
import type { SchemaFile } from './schema-bundle.ts';
import { fullValidatorFor, validateDecoded, validateEnvelope, validatorFor } from './validate.ts';
import { QUICK } from './validators.generated.js';

const root = new URL('../../', import.meta.url).pathname;

function jsonFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...jsonFiles(path));
    else if (name.endsWith('.json') && !name.endsWith('.expect.json')) out.push(path);
  }
  return out;
}

/** Every fixture message, valid and invalid, and variants with a broken timestamp or deadline. */
function samples(): [string, unknown][] {
  const out: [string, unknown][] = [];
  for (const path of [...jsonFiles(join(root, 'fixtures/messages')), ...jsonFiles(join(root, 'fixtures/invalid'))]) {
    let value: unknown;
    try {
      value = JSON.parse(readFileSync(path, 'utf8'));
    } catch {
      continue;
    }
    out.push([path, value]);
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      for (const ts of ['2026-02-30T00:00:00Z', '2026-01-01T24:00:00Z', '2026-01-01t00:00:00z', '2026-01-01T00:00:00+01:00']) {
        out.push([`${path} timestamp ${ts}`, { ...value, timestamp: ts }]);
        const payload = (value as { payload?: unknown }).payload;
        if (payload && typeof payload === 'object')
          out.push([`${path} deadline ${ts}`, { ...value, payload: { ...payload, deadline: ts } }]);
      }
    }
  }
  return out;
}

describe('quick checks', () => {
  const all = samples();

  it('covers valid and invalid fixtures', () => {
    expect(all.length).toBeGreaterThan(300);
  });

  it('the envelope check gives the issues of the full validator on every fixture (spec: envelope#fields)', () => {
    const full = fullValidatorFor('envelope.schema.json');
    let invalid = 0;
    for (const [name, value] of all) {
      const want = full(value);
      if (want) invalid++;
      expect(validateEnvelope(value), name).toEqual(want);
    }
    expect(invalid).toBeGreaterThan(20);
  });

  it('each body check gives the issues of the full body validator on every fixture (spec: messages#payload-validation)', () => {
    let invalid = 0;
    for (const [name, value] of all) {
      const type = (value as { type?: unknown } | null)?.type;
      if (typeof type !== 'string' || !isKnownType(type)) continue;
      const want = fullValidatorFor(`${type}.body.schema.json`)(value);
      if (want) invalid++;
      expect(validateDecoded(value), name).toEqual(want);
    }
    expect(invalid).toBeGreaterThan(20);
  });

  it('the agent card, plan, task record and capability input checks give the issues of their full validators (spec: messages#payload-validation)', () => {
    const members = (path: string[]): unknown[] =>
      all.map(([, v]) => path.reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), v));
    /** A value, and the value with each member dropped or made a number in turn. */
    const broken = (v: unknown): unknown[] =>
      v && typeof v === 'object' && !Array.isArray(v)
        ? [
            v,
            ...Object.keys(v).flatMap((k) =>
              [
                { ...v, [k]: undefined },
                { ...v, [k]: 7 },
              ].map((x) => JSON.parse(JSON.stringify(x))),
            ),
          ]
        : [v];
    const inputs = readdirSync(join(root, 'schemas/v1')).filter((f) => f.endsWith('.input.schema.json'));
    const records = [
      ...jsonFiles(join(root, 'fixtures/workspace/task-record')),
      ...jsonFiles(join(root, 'fixtures/workspace/invalid/task-record')),
    ].map((path) => JSON.parse(readFileSync(path, 'utf8')) as unknown);
    const cases: [SchemaFile, unknown[]][] = [
      ['agent-card.schema.json', [...members(['payload', 'agent'])].filter(Boolean).flatMap(broken)],
      ['task-record.schema.json', records.flatMap(broken)],
      ['plan.schema.json', [...members(['payload', 'plan'])].filter(Boolean).flatMap(broken)],
      ...inputs.map((f): [SchemaFile, unknown[]] => [
        f as SchemaFile,
        [...members(['payload', 'input']), { count: 3 }, { ms: 5 }, { code: 'BUSY' }, { count: -1 }, {}, [], 'x', null].flatMap(broken),
      ]),
    ];
    // Each has a quick check of its own: an agent's start-up and a valid request never load the full validators.
    expect(cases.map(([file]) => file).filter((file) => !Object.hasOwn(QUICK, file))).toEqual([]);
    let valid = 0;
    let invalid = 0;
    for (const [file, values] of cases) {
      expect(values.length, file).toBeGreaterThan(3);
      for (const value of values) {
        const want = fullValidatorFor(file)(value);
        if (want) invalid++;
        else valid++;
        expect(validatorFor(file)(value), `${file} ${JSON.stringify(value)}`).toEqual(want);
      }
    }
    expect(valid).toBeGreaterThan(10);
    expect(invalid).toBeGreaterThan(50);
  });
});
