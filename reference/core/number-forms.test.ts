import { describe, expect, it } from 'vitest';
import { isIntegerText, numberTextAt } from './number-forms.ts';

describe('number forms (spec: conformance#input-forms)', () => {
  it('finds the written form of a nested number past strings, escapes and containers', () => {
    const text = ' { "a" : "}\\"{", "payload" : {"x":[1,{"ms":2}], "input": { "n\\u006ds": 1, "ms" : 5.0 } } }';
    expect(numberTextAt(text, ['payload', 'input', 'ms'])).toBe('5.0');
    expect(numberTextAt(text, ['payload', 'input', 'nms'])).toBe('1');
    expect(numberTextAt(text, ['payload', 'missing'])).toBeUndefined();
    expect(numberTextAt(text, ['a'])).toBeUndefined();
  });

  it('takes only digits without a fraction or exponent for an integer', () => {
    expect(isIntegerText('5')).toBe(true);
    expect(isIntegerText('-0')).toBe(true);
    expect(isIntegerText('5.0')).toBe(false);
    expect(isIntegerText('5e0')).toBe(false);
    expect(isIntegerText('5E+0')).toBe(false);
  });
});
