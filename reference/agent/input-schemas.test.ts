import { describe, expect, it } from 'vitest';
import failInput from '../../schemas/v1/tap.test.fail.input.schema.json' with { type: 'json' };
import sleepInput from '../../schemas/v1/tap.test.sleep.input.schema.json' with { type: 'json' };
import { validatorFor } from '../core/validate.ts';
import { inputValidator } from './input-schemas.ts';

describe('capability input schemas (spec: tasks#acceptance)', () => {
  it('uses the validator compiled ahead of time for a schema published in schemas/v1', () => {
    expect(inputValidator('tap.test.fail', failInput)).toBe(validatorFor('tap.test.fail.input.schema.json'));
    expect(inputValidator('tap.test.sleep', sleepInput)({ ms: 'soon' })).not.toBeNull();
    expect(inputValidator('tap.test.sleep', sleepInput)({ ms: 5 })).toBeNull();
  });

  it('refuses an integer of a conformance input form written with a fraction or an exponent (spec: conformance#input-forms)', () => {
    const check = inputValidator('tap.test.sleep', sleepInput);
    const request = (ms: string) => `{"type":"task.request","payload":{"capability":"tap.test.sleep","input":{"ms":${ms}}}}`;
    expect(check({ ms: 5 }, request('5'))).toBeNull();
    expect(check({ ms: 5 }, request('5.0'))).toEqual([expect.objectContaining({ path: '/ms', keyword: 'type' })]);
    expect(check({ ms: 5 }, request('5e0'))).not.toBeNull();
  });

  it('compiles any other schema, and reports its issues by path', () => {
    const check = inputValidator('text.upper', { type: 'object', required: ['text'], properties: { text: { type: 'string' } } });
    expect(check({ text: 'a' })).toBeNull();
    expect(check({})).toEqual([expect.objectContaining({ path: '/text', keyword: 'required' })]);
    expect(check({ text: 1 })).toEqual([expect.objectContaining({ path: '/text', keyword: 'type' })]);
  });

  it('names the capability whose schema does not compile', () => {
    expect(() => inputValidator('text.upper', { type: 'no-such-type' })).toThrow(/input schema of capability text\.upper does not compile/);
  });

  it('refuses at once a schema the meta-schema takes but the compiler cannot: a reference to nothing, a broken regular expression', () => {
    expect(() => inputValidator('text.upper', { $ref: '#/$defs/missing' })).toThrow(
      /text\.upper does not compile: can't resolve reference/,
    );
    expect(() => inputValidator('text.upper', { type: 'object', properties: { a: { $ref: '#/$defs/missing' } } })).toThrow(
      /text\.upper does not compile/,
    );
    expect(() => inputValidator('text.upper', { type: 'string', pattern: '(' })).toThrow(
      /text\.upper does not compile: .*regular expression/i,
    );
    expect(() => inputValidator('text.upper', { type: 'object', patternProperties: { '[': {} } })).toThrow(/text\.upper does not compile/);
  });

  it('checks inputs by the schema as it was given, not as the caller changed it later', () => {
    const schema = { type: 'object', required: ['text'], properties: { text: { type: 'string' } } };
    const check = inputValidator('text.upper', schema);
    schema.required = [];
    schema.properties.text.type = 'number';
    expect(check({})).toEqual([expect.objectContaining({ path: '/text', keyword: 'required' })]);
    expect(check({ text: 'a' })).toBeNull();
  });

  it('refuses, by the meta-schema of JSON Schema 2020-12, a schema the compiler alone would take', () => {
    // Ajv compiles a negative minLength or a non-unique required list without complaint when it
    // does not check the schema first; the meta-schema refuses them, with the path of the fault.
    expect(() => inputValidator('text.upper', { type: 'string', minLength: -1 })).toThrow(
      /text\.upper does not compile: schema is invalid: data\/minLength must be >= 0/,
    );
    expect(() => inputValidator('text.upper', { required: ['a', 'a'] })).toThrow(/data\/required must NOT have duplicate items/);
    expect(() => inputValidator('text.upper', { $defs: { n: { type: 5 } } })).toThrow(/data\/\$defs\/n\/type/);
  });

  it('checks a schema that names another draft by that draft, and refuses one it does not know', () => {
    const draft = 'https://json-schema.org/draft/2020-12/schema';
    expect(inputValidator('text.upper', { $schema: draft, type: 'string' })('a')).toBeNull();
    expect(() => inputValidator('text.upper', { $schema: 'http://json-schema.org/draft-07/schema#', type: 'string' })).toThrow(
      /does not compile: no schema with key or ref "http:\/\/json-schema\.org\/draft-07\/schema#"/,
    );
  });
});
