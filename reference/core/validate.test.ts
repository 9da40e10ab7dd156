import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { samplePing, sampleCard } from './samples.testkit.ts';
import {
  toIssues,
  validateAgainst,
  validateDecoded,
  validateEnvelope,
  validateMessage,
  validatePayload,
  validatorFor,
} from './validate.ts';

describe('validate', () => {
  it('accepts a valid envelope and message (spec: envelope#fields)', () => {
    expect(validateEnvelope(samplePing())).toBeNull();
    expect(validateMessage(samplePing())).toBeNull();
  });

  it('reports a missing member at its own path (spec: messages#payload-validation)', () => {
    const { message_id: _m, ...rest } = samplePing();
    expect(validateEnvelope(rest)).toEqual([
      { path: '/message_id', keyword: 'required', message: "must have required property 'message_id'" },
    ]);
  });

  it('refuses "*" as target outside handshake.init, and only reports the failing member (spec: envelope#source-and-target)', () => {
    const issues = validateEnvelope(samplePing({ target: '*' }));
    expect(issues).not.toBeNull();
    expect(issues!.every((i) => i.path === '/target')).toBe(true);
    expect(issues!.some((i) => i.keyword === 'if')).toBe(false);
    expect(validateEnvelope(samplePing({ type: 'handshake.init', target: '*' }))).toBeNull();
  });

  it('applies the per-type required members: task.event needs task_id and sequence (spec: messages#payload-validation)', () => {
    const event = samplePing({ type: 'task.event', payload: { kind: 'log', level: 'info', message: 'hi' } });
    const paths = validateMessage(event)!
      .map((i) => i.path)
      .sort();
    expect(paths).toEqual(['/sequence', '/task_id']);
    expect(validateMessage({ ...event, task_id: 't-1', sequence: 2 })).toBeNull();
  });

  it('names an unknown type as one issue at /type (spec: messages#direction)', () => {
    expect(validateMessage(samplePing({ type: 'task.nope' }))).toEqual([
      { path: '/type', keyword: 'discriminator', message: '"task.nope" is not a TAP 1.0 message type' },
    ]);
    expect(validatePayload('task.nope', {})![0]!.keyword).toBe('discriminator');
  });

  it('validates payloads by type and other schemas by file name', () => {
    expect(validatePayload('ping', {})).toBeNull();
    expect(
      validatePayload('task.request', {})!
        .map((i) => i.path)
        .sort(),
    ).toEqual(['/capability', '/input']);
    expect(validateAgainst('agent-card.schema.json', sampleCard('a', ['x.y']))).toBeNull();
    expect(validateAgainst('identifier.schema.json', 'Not-An-Id')![0]!.keyword).toBe('pattern');
  });

  it('ignores unknown members, since the schemas are open (spec: envelope#extensibility)', () => {
    expect(validateMessage(samplePing({ x_extra: 1, payload: { 'x-note': 'hi' } }))).toBeNull();
  });

  it('wraps each validator once, and names a file that has none', () => {
    expect(validatorFor('envelope.schema.json')).toBe(validatorFor('envelope.schema.json'));
    expect(() => validatorFor('nope.schema.json' as never)).toThrow(/no validator for nope.schema.json/);
  });

  it('escapes member names in paths and merges repeated issues', () => {
    const e = { instancePath: '/a', schemaPath: '#', keyword: 'required', params: { missingProperty: 'x/y~z' }, message: 'm' };
    expect(toIssues([e, e])).toEqual([{ path: '/a/x~1y~0z', keyword: 'required', message: 'm' }]);
  });
});

describe('validateDecoded', () => {
  /** Every JSON object among the message fixtures, valid and invalid. */
  function fixtures(): unknown[] {
    const root = new URL('../../fixtures/', import.meta.url).pathname;
    const out: unknown[] = [];
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, e.name);
        if (e.isDirectory()) walk(path);
        else if (e.name.endsWith('.json') && !e.name.endsWith('.expect.json')) {
          try {
            const v: unknown = JSON.parse(readFileSync(path, 'utf8'));
            if (typeof v === 'object' && v !== null && !Array.isArray(v) && 'type' in v) out.push(v);
          } catch {
            // a raw frame that is not JSON: not a message to validate
          }
        }
      }
    };
    for (const d of ['messages', 'invalid']) walk(join(root, d));
    return out;
  }

  it('gives exactly the issues of validateMessage for every fixture whose envelope is valid (spec: messages#payload-validation)', () => {
    const all = fixtures();
    const checked = all.filter((m) => validateEnvelope(m) === null);
    expect(checked.length).toBeGreaterThan(150);
    for (const m of checked) expect(validateDecoded(m), JSON.stringify(m).slice(0, 200)).toEqual(validateMessage(m));
    expect(checked.some((m) => validateMessage(m) !== null)).toBe(true);
  });
});
