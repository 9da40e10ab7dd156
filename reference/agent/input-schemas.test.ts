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
});
