import { describe, expect, it } from 'vitest';
import { samplePing, sampleCard } from './testkit.ts';
import { toIssues, validateAgainst, validateEnvelope, validateMessage, validatePayload, validatorFor } from './validate.ts';

describe('validate', () => {
  it('accepts a valid envelope and message (spec: envelope#fields)', () => {
    expect(validateEnvelope(samplePing())).toBeNull();
    expect(validateMessage(samplePing())).toBeNull();
  });

  it('reports a missing member at its own path (spec: messages#payload-validation)', () => {
    const { message_id: _m, ...rest } = samplePing();
    expect(validateEnvelope(rest)).toEqual([{ path: '/message_id', keyword: 'required', message: "must have required property 'message_id'" }]);
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
    const paths = validateMessage(event)!.map((i) => i.path).sort();
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
    expect(validatePayload('task.request', {})!.map((i) => i.path).sort()).toEqual(['/capability', '/input']);
    expect(validateAgainst('agent-card.schema.json', sampleCard('a', ['x.y']))).toBeNull();
    expect(validateAgainst('identifier.schema.json', 'Not-An-Id')![0]!.keyword).toBe('pattern');
  });

  it('ignores unknown members, since the schemas are open (spec: envelope#extensibility)', () => {
    expect(validateMessage(samplePing({ x_extra: 1, payload: { 'x-note': 'hi' } }))).toBeNull();
  });

  it('compiles each schema once', () => {
    expect(validatorFor('envelope.schema.json')).toBe(validatorFor('envelope.schema.json'));
    expect(() => validatorFor('nope.schema.json' as never)).toThrow(/no schema/);
  });

  it('escapes member names in paths and merges repeated issues', () => {
    const e = { instancePath: '/a', schemaPath: '#', keyword: 'required', params: { missingProperty: 'x/y~z' }, message: 'm' };
    expect(toIssues([e, e])).toEqual([{ path: '/a/x~1y~0z', keyword: 'required', message: 'm' }]);
  });
});
