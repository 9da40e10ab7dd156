import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inspectParsed, MAX_NESTING_DEPTH, scanJson } from './ijson.ts';

/** The quick path (no duplicates asked for) must find what the full scan finds. */
const quick = (text: string) => {
  const found = inspectParsed(text, JSON.parse(text), false);
  expect(found.ijson?.path).toEqual(scanJson(text, false).ijson?.path);
  return found;
};

describe('inspectParsed without duplicate tracking', () => {
  it.each([
    ['{"a":9007199254740992}', '/a'],
    ['{"a": 9007199254740992}', '/a'],
    ['{"a":[1,\n -12345678901234567]}', '/a/1'],
    ['{"a":[ 1e400]}', '/a/0'],
    ['{"a":{"b":1.5E300,"c":1e999}}', '/a/c'],
    ['{"a":2e19,"b":20000000000000000000}', '/b'],
    ['{"s":"\\ud800"}', '/s'],
  ])('finds the violation in %s (spec: envelope#encoding)', (text, path) => {
    expect(quick(text).ijson?.path).toBe(path);
  });

  it('passes a message with hex ids, 15-digit numbers and exponents inside strings', () => {
    expect(quick('{"id":"task-5369b12e19b8a6de6eeb","n":123456789012345,"s":"1e400","t":":12345678901234567"}')).toEqual({});
  });

  it('refuses nesting one level beyond the limit and allows the limit (spec: limits#nesting)', () => {
    const nest = (levels: number) => '{"a":'.repeat(levels - 1) + '{}' + '}'.repeat(levels - 1);
    expect(inspectParsed(nest(MAX_NESTING_DEPTH), JSON.parse(nest(MAX_NESTING_DEPTH)), false)).toEqual({});
    expect(inspectParsed(nest(MAX_NESTING_DEPTH + 1), JSON.parse(nest(MAX_NESTING_DEPTH + 1)), false).nesting).toBeDefined();
  });

  it('agrees with the full scan on arbitrary JSON values', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const text = JSON.stringify({ v });
        quick(text);
      }),
      { numRuns: 500 },
    );
  });
});
