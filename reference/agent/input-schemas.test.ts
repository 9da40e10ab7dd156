import { describe, expect, it } from 'vitest';
import sleepInput from '../../schemas/v1/tap.test.sleep.input.schema.json' with { type: 'json' };
import { validatorFor } from '../core/validate.ts';
import { inputValidator } from './input-schemas.ts';

describe('capability input schemas (spec: tasks#acceptance)', () => {
  it('uses the validator compiled ahead of time for a schema published in schemas/v1', () => {
    expect(inputValidator('tap.test.sleep', sleepInput)).toBe(validatorFor('tap.test.sleep.input.schema.json'));
    expect(inputValidator('tap.test.sleep', sleepInput)({ ms: 'soon' })).not.toBeNull();
    expect(inputValidator('tap.test.sleep', sleepInput)({ ms: 5 })).toBeNull();
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
