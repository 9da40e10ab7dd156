import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { SCHEMA_ASSUMPTIONS, surelyValidBody, surelyValidEnvelope } from './fast-accept.ts';
import { isKnownType } from './catalogue.ts';
import { fullValidatorFor } from './validate.ts';

const root = new URL('../../', import.meta.url).pathname;

function jsonFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return jsonFiles(path);
    return name.endsWith('.json') && !name.endsWith('.expect.json') ? [path] : [];
  });
}

function fixtures(dir: string): [string, Record<string, unknown>][] {
  const out: [string, Record<string, unknown>][] = [];
  for (const path of jsonFiles(join(root, dir))) {
    try {
      const value: unknown = JSON.parse(readFileSync(path, 'utf8'));
      if (value && typeof value === 'object' && !Array.isArray(value))
        out.push([path.slice(root.length), value as Record<string, unknown>]);
    } catch {
      // not JSON: nothing for these checks
    }
  }
  return out;
}

const valid = fixtures('fixtures/messages');
const all = [...valid, ...fixtures('fixtures/invalid')];
const envelope = fullValidatorFor('envelope.schema.json');
const body = (m: Record<string, unknown>) =>
  typeof m.type === 'string' && isKnownType(m.type) ? fullValidatorFor(`${m.type}.body.schema.json`)(m) : [{ path: '/type' }];

/** Holds the fast checks to their one promise: "surely valid" only for what the full validators accept. */
function expectSound(name: string, m: Record<string, unknown>): void {
  if (surelyValidEnvelope(m)) expect(envelope(m), `${name}: the envelope was taken as surely valid`).toBeNull();
  if (surelyValidBody(m)) expect(body(m), `${name}: the body was taken as surely valid`).toBeNull();
}

function pointer(schema: unknown, path: string): unknown {
  return path
    .split('/')
    .slice(1)
    .reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), schema);
}

const HOT = ['task.request', 'task.accepted', 'task.event', 'task.result'];
const schemaOf = (file: string): { properties: Record<string, unknown> } =>
  JSON.parse(readFileSync(join(root, 'schemas/v1', file), 'utf8'));
/** Every member the envelope and the four payloads define: the ones the mutations replace. */
const MEMBERS = [
  ...new Set([
    ...Object.keys(schemaOf('envelope.schema.json').properties),
    ...HOT.flatMap((t) => Object.keys(schemaOf(`${t}.payload.schema.json`).properties)),
  ]),
];

describe('the fast acceptance of common messages (spec: messages#payload-validation)', () => {
  it('was written for the schemas as they are emitted', () => {
    for (const [where, want] of Object.entries(SCHEMA_ASSUMPTIONS)) {
      const [file, path] = where.split('#') as [string, string];
      expect(pointer(schemaOf(file), path), where).toEqual(want);
    }
  });

  it('takes as surely valid only what the full validators accept, on every fixture', () => {
    expect(all.length).toBeGreaterThan(200);
    for (const [name, m] of all) expectSound(name, m);
  });

  it('takes the plain fixtures of the task messages without the validators', () => {
    const plain = [
      'task.request/echo.json',
      'task.accepted/',
      'task.event/output.json',
      'task.event/state-running.json',
      'task.event/log.json',
      'task.result/completed.json',
    ];
    for (const part of plain) {
      const found = valid.filter(([name]) => name.includes(part));
      expect(found.length, part).toBeGreaterThan(0);
      for (const [name, m] of found.slice(0, 1)) {
        expect(surelyValidEnvelope(m), name).toBe(true);
        expect(surelyValidBody(m), name).toBe(true);
      }
    }
  });

  it('never takes a broken field as valid: each envelope and payload member replaced by odd values', () => {
    expect(MEMBERS.length).toBeGreaterThan(25);
    const hot = valid.filter(([, m]) => HOT.includes(m.type as string));
    const oddString = fc.oneof(
      fc.constantFrom('', '*', '.', 'a..b', 'a.', '-a', 'A', 'a b', 'tap/1.0', 'tap/01.0', 'x\n', '\u2028', 'é', '\ud800', 'a'.repeat(129)),
      fc.string({ maxLength: 140 }),
      fc.stringMatching(/^[A-Za-z0-9._:\-*]{0,140}$/),
    );
    const oddTimestamp = fc
      .record({
        y: fc.integer({ min: 0, max: 9999 }),
        mo: fc.integer({ min: 0, max: 13 }),
        d: fc.integer({ min: 0, max: 32 }),
        h: fc.integer({ min: 0, max: 25 }),
        mi: fc.integer({ min: 0, max: 60 }),
        s: fc.integer({ min: 0, max: 61 }),
        tail: fc.constantFrom('Z', '.5Z', '.Z', '.123456789Z', 'z', '+00:00', '', 'Z\n'),
      })
      .map(
        ({ y, mo, d, h, mi, s, tail }) =>
          `${String(y).padStart(4, '0')}-${String(mo).padStart(2, '0')}-${String(d).padStart(2, '0')}T${String(h).padStart(2, '0')}:${String(mi).padStart(2, '0')}:${String(s).padStart(2, '0')}${tail}`,
      );
    const oddValue = fc.oneof(
      oddString,
      oddTimestamp,
      fc.constantFrom(0, -1, 1.5, 2 ** 53, 9007199254740991, null, true, [], {}, { attempt: 0 }, { trace_id: 'a\u0001' }, undefined),
      fc.integer(),
    );
    const cases = fc.record({
      at: fc.nat({ max: hot.length - 1 }),
      inPayload: fc.boolean(),
      member: fc.constantFrom(...MEMBERS),
      value: oddValue,
    });
    fc.assert(
      fc.property(cases, ({ at, inPayload, member, value }) => {
        const [name, base] = hot[at]!;
        const m = structuredClone(base);
        const holder = inPayload && m.payload && typeof m.payload === 'object' ? (m.payload as Record<string, unknown>) : m;
        if (value === undefined) delete holder[member];
        else holder[member] = value;
        expectSound(`${name} with ${inPayload ? 'payload.' : ''}${member} = ${JSON.stringify(value)}`, m);
      }),
      { numRuns: 4000 },
    );
  });

  it('takes a 1.1 task message with a well-formed traceparent without the validators, and no broken one (spec: envelope#trace-context)', () => {
    const [name, base] = valid.find(([n]) => n.includes('task.request/echo.json'))!;
    const withTrace = (traceparent: unknown, protocol = 'tap/1.1') => ({
      ...base,
      protocol,
      metadata: { traceparent },
    });
    const good = withTrace('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    expect(surelyValidEnvelope(good), name).toBe(true);
    expect(envelope(good)).toBeNull();
    const broken = [
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
      '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\n',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7',
      42,
    ];
    for (const traceparent of broken) {
      expect(surelyValidEnvelope(withTrace(traceparent)), String(traceparent)).toBe(false);
      expect(envelope(withTrace(traceparent)), String(traceparent)).not.toBeNull();
    }
    // tracestate and baggage still go to the validators.
    expect(surelyValidEnvelope({ ...good, metadata: { ...good.metadata, tracestate: 'a=b' } })).toBe(false);
  });

  it('takes no empty timestamp, session_id or traceparent as valid before it has seen a valid one (a fresh process)', async () => {
    vi.resetModules();
    const fresh = await import('./fast-accept.ts');
    const [name, base] = valid.find(([n]) => n.includes('task.result/'))!;
    const blank = { ...base, protocol: 'tap/1.1', timestamp: '', session_id: '', metadata: { traceparent: '' } };
    for (const m of [
      { ...blank, session_id: base.session_id, metadata: undefined },
      { ...blank, timestamp: base.timestamp, metadata: undefined },
      { ...blank, timestamp: base.timestamp, session_id: base.session_id },
    ]) {
      expect(fresh.surelyValidEnvelope(m) || fresh.surelyValidBody(m), `${name} with an empty member`).toBe(false);
      expect(envelope(m) ?? body(m), `${name} with an empty member`).not.toBeNull();
    }
  });
});
