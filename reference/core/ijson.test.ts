import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inspectParsed, inspectValue, MAX_SAFE, scanJson } from './ijson.ts';

const inspect = (text: string, duplicates = true) => inspectParsed(text, JSON.parse(text), duplicates);
/** Both implementations must agree on what they report. */
const both = (text: string, duplicates = true) => {
  const fast = inspect(text, duplicates);
  const full = scanJson(text, duplicates);
  expect(fast.duplicate).toEqual(full.duplicate);
  if (!fast.duplicate) expect(fast.ijson?.path).toEqual(full.ijson?.path);
  return fast;
};

describe('I-JSON and duplicate members', () => {
  it.each([
    ['9007199254740991', true],
    ['-9007199254740991', true],
    ['9007199254740992', false],
    ['-9007199254740992', false],
    ['9007199254740993', false],
    ['1e400', false],
    ['-1e400', false],
    ['1e-400', true],
    ['-0', true],
    ['0.5', true],
    ['9007199254740991.0', true],
    ['1e15', true],
    // An integer is a number written without a fraction or exponent part (spec: envelope#encoding,
    // conformance#input-forms): 1e308 is a number of the double range, not an integer outside ±(2^53−1).
    ['1e20', true],
    ['1e308', true],
    ['-1E308', true],
    ['1.5e300', true],
    ['9007199254740993.5', true],
    ['1e309', false],
    ['100000000000000000000', false],
    ['12345678901234567890', false],
    ['123456789012345.678', true],
  ])('judges the number %s I-JSON: %s (spec: envelope#encoding)', (num, ok) => {
    const found = both(`{"a":{"b":[0,${num}]}}`);
    expect(found.ijson === undefined).toBe(ok);
    if (!ok) expect(found.ijson!.path).toBe('/a/b/1');
  });

  it('uses 2^53 − 1 as the I-JSON bound', () => {
    expect(MAX_SAFE).toBe(Number.MAX_SAFE_INTEGER);
  });

  it.each([
    ['a paired escape', '"\\ud83d\\ude00"', true],
    ['a raw astral character', '"😀"', true],
    ['a lone high surrogate at the end', '"ab\\ud83d"', false],
    ['a high surrogate before a non-surrogate escape', '"\\ud83d\\u0041"', false],
    ['a high surrogate before a plain character', '"\\ud83dx"', false],
    ['a lone low surrogate', '"\\ude00"', false],
    ['two high surrogates', '"\\ud83d\\ud83d\\ude00"', false],
    ['an escaped backslash before "ud800"', '"\\\\ud800"', true],
    ['upper-case hex', '"\\uD83D\\uDE00"', true],
  ])('judges a string with %s (spec: envelope#encoding)', (_name, str, ok) => {
    const found = both(`{"x":[1,{"s":${str}}]}`);
    expect(found.ijson === undefined).toBe(ok);
    if (!ok) expect(found.ijson!.path).toBe('/x/1/s');
  });

  it('refuses a lone surrogate in a member name', () => {
    expect(inspect('{"o":{"\\udc00":1}}').ijson?.path).toBe('/o/\udc00');
    expect(scanJson('{"o":{"\\udc00":1}}', false).ijson?.path).toBe('/o');
  });

  it('finds duplicate members at any depth and names the object (spec: integrity#verification)', () => {
    expect(both('{"a":1,"a":2}').duplicate).toEqual({ path: '', member: 'a' });
    expect(both('{"p":{"q":[{"x":1},{"y":1,"y":1}]}}').duplicate).toEqual({ path: '/p/q/1', member: 'y' });
    expect(both('{"a":1,"\\u0061":2}').duplicate).toEqual({ path: '', member: 'a' });
    expect(both('{"k/~":{"z":1,"z":1}}').duplicate).toEqual({ path: '/k~1~0', member: 'z' });
  });

  it('does not confuse equal names in different objects, names inside strings, or white space with duplicates', () => {
    expect(both('{"a":{"a":1},"b":[{"a":1},{"a":2}]}').duplicate).toBeUndefined();
    expect(both('{"a":"\\"a\\":1","b":"x\\":y"}').duplicate).toBeUndefined();
    expect(both('{ "a" : 1 ,\n\t"b"\r\n:\n{ "a" : 2 } }').duplicate).toBeUndefined();
    expect(both('{ "a" : 1 , "a" : 2 }').duplicate).toEqual({ path: '', member: 'a' });
  });

  it('reports a duplicate before an I-JSON violation, and ignores duplicates unless asked', () => {
    const text = '{"n":9007199254740992,"d":1,"d":2}';
    expect(inspect(text, true)).toEqual({ duplicate: { path: '', member: 'd' } });
    expect(inspect(text, false).duplicate).toBeUndefined();
    expect(inspect(text, false).ijson?.path).toBe('/n');
  });

  it('finds nothing wrong in what JSON.stringify writes from safe values', () => {
    const safe = fc.jsonValue({ stringUnit: 'binary' }).filter((v) => !JSON.stringify(v).match(/\d{16}|e\+/));
    fc.assert(
      fc.property(safe, (value) => {
        const text = JSON.stringify({ v: value });
        expect(inspect(text)).toEqual({});
        expect(scanJson(text, true)).toEqual({});
      }),
      { numRuns: 300 },
    );
  });
});

describe('a value about to be written (inspectValue)', () => {
  it('names the path and the value of an integer JSON.stringify writes beyond ±(2^53−1) (spec: envelope#encoding)', () => {
    expect(inspectValue({ a: [1, 2 ** 53] })).toEqual({ path: '/a/1', message: '9007199254740992 is an integer outside ±(2^53−1)' });
    expect(inspectValue({ a: -(10 ** 20) })).toEqual({ path: '/a', message: '-100000000000000000000 is an integer outside ±(2^53−1)' });
  });

  it('passes what JSON.stringify writes with an exponent or a fraction, 1e308 among them', () => {
    expect(inspectValue({ a: 1e308, b: -1e21, c: 0.5, d: MAX_SAFE })).toBeUndefined();
    expect(JSON.stringify(1e308)).toBe('1e+308');
  });

  it('refuses a number JSON cannot hold, a lone surrogate and nesting beyond the limit at its level', () => {
    expect(inspectValue({ a: [Number.NaN] })?.path).toBe('/a/0');
    expect(inspectValue({ a: Number.POSITIVE_INFINITY })?.message).toMatch(/JSON\.stringify would write null/);
    expect(inspectValue({ s: '\ud800' })?.path).toBe('/s');
    const nest = (levels: number): unknown => (levels === 1 ? {} : { a: nest(levels - 1) });
    expect(inspectValue(nest(62), 3)).toBeUndefined();
    expect(inspectValue(nest(63), 3)).toBeDefined();
  });
});
