import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { extended } from './extended.ts';

describe('extended: the spread of two objects, without the spread', () => {
  it('gives what { ...a, ...b } gives: the same members, values and order', () => {
    const member = fc.constantFrom('a', 'b', 'attempt', 'traceparent', '__proto__', 'constructor', 'toString', '0', '1');
    const obj = fc.dictionary(member, fc.jsonValue(), { maxKeys: 6 }).map((d) => JSON.parse(JSON.stringify(d)) as Record<string, unknown>);
    fc.assert(
      fc.property(fc.option(obj, { nil: undefined }), obj, (a, b) => {
        const want = { ...a, ...b };
        const got = extended(a, b);
        expect(Reflect.ownKeys(got)).toEqual(Reflect.ownKeys(want));
        for (const k of Reflect.ownKeys(want))
          expect((got as Record<PropertyKey, unknown>)[k]).toEqual((want as Record<PropertyKey, unknown>)[k]);
        expect(Object.getPrototypeOf(got)).toBe(Object.prototype);
      }),
      { numRuns: 500 },
    );
  });

  it('keeps a member named __proto__ from parsed JSON as an own member, and the prototype untouched', () => {
    const hostile = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as Record<string, unknown>;
    const got = extended(hostile, { b: 2 }) as Record<string, unknown>;
    expect(Object.hasOwn(got, '__proto__')).toBe(true);
    expect(got.polluted).toBeUndefined();
    expect(JSON.stringify(got)).toBe(JSON.stringify({ ...hostile, b: 2 }));
    const after = extended({ a: 1 }, hostile) as Record<string, unknown>;
    expect(Object.getPrototypeOf(after)).toBe(Object.prototype);
    expect(JSON.stringify(after)).toBe(JSON.stringify({ a: 1, ...hostile }));
  });
});
