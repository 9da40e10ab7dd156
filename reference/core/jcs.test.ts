import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import example from '../../spec/1.0/examples/signing-example.json' with { type: 'json' };
import { canonicalBytes, canonicalize, CanonicalizationError } from './jcs.ts';

const fromBits = (hex: string) => new DataView(Uint8Array.from(hex.match(/../g)!.map((h) => parseInt(h, 16))).buffer).getFloat64(0);

describe('canonicalize (RFC 8785)', () => {
  it('writes the RFC 8785 §3.2.2 sample: sorted members, ECMAScript numbers, minimal escapes (spec: integrity#signing)', () => {
    const input = JSON.parse(
      '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],' +
        '"string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",' +
        '"literals": [null, true, false]}',
    );
    expect(canonicalize(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it('sorts member names by UTF-16 code units, as the RFC 8785 §3.2.3 sample shows', () => {
    const input = JSON.parse(
      '{"\\u20ac": "Euro Sign", "\\r": "Carriage Return", "\\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One",' +
        '"\\ud83d\\ude00": "Emoji: Grinning Face", "\\u0080": "Control", "\\u00f6": "Latin Small Letter O With Diaeresis"}',
    );
    expect(canonicalize(input)).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","ö":"Latin Small Letter O With Diaeresis","€":"Euro Sign","😀":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
  });

  it.each([
    ['0000000000000000', '0'],
    ['8000000000000000', '0'],
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['ffefffffffffffff', '-1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['44b52d02c7e14af7', '1.0000000000000001e+23'],
    ['444b1ae4d6e2ef4e', '999999999999999700000'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555554', '333333333.33333325'],
    ['41b3de4355555555', '333333333.3333333'],
    ['41b3de4355555556', '333333333.3333334'],
    ['41b3de4355555557', '333333333.33333343'],
    ['becbf647612f3696', '-0.0000033333333333333333'],
    ['43143ff3c1cb0959', '1424953923781206.2'],
  ])('writes the IEEE 754 value %s as %s (RFC 8785 appendix B)', (bits, text) => {
    expect(canonicalize(fromBits(bits))).toBe(text);
  });

  it.each([['7fffffffffffffff'], ['7ff0000000000000'], ['fff0000000000000']])('refuses the non-finite value %s', (bits) => {
    expect(() => canonicalize({ n: fromBits(bits) })).toThrow(CanonicalizationError);
  });

  it('refuses a lone surrogate in a value or a member name (spec: envelope#encoding)', () => {
    expect(() => canonicalize({ s: 'a\ud800' })).toThrow(CanonicalizationError);
    expect(() => canonicalize({ '\udc00': 1 })).toThrow(CanonicalizationError);
    expect(() => canonicalize(1n)).toThrow(CanonicalizationError);
  });

  it('keeps non-ASCII characters literal and escapes control characters in lowercase hex', () => {
    expect(canonicalize('é€😀\u001f\u007f\t')).toBe('"é€😀\\u001f\u007f\\t"');
  });

  it('sorts nested objects and keeps array order', () => {
    expect(canonicalize({ b: [3, { z: 1, a: [] }, 'x'], a: { d: null, c: {} } })).toBe(
      '{"a":{"c":{},"d":null},"b":[3,{"a":[],"z":1},"x"]}',
    );
  });

  it('treats values as JSON.stringify does: toJSON, undefined members skipped, undefined array items null', () => {
    expect(canonicalize({ t: new Date(0), u: undefined, f: () => 1, a: [undefined] })).toBe('{"a":[null],"t":"1970-01-01T00:00:00.000Z"}');
  });

  it('reproduces the spec worked example, 463 bytes of UTF-8 (spec: integrity#worked-example)', () => {
    expect(canonicalize(example.message_unsigned)).toBe(example.canonical);
    expect(canonicalBytes(example.message_unsigned)).toHaveLength(example.canonical_utf8_bytes);
  });

  it('is idempotent: canonicalize(parse(canonicalize(x))) equals canonicalize(x)', () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: 'binary' }), (value) => {
        const once = canonicalize(value);
        expect(canonicalize(JSON.parse(once))).toBe(once);
      }),
      { numRuns: 300 },
    );
  });

  it('orders members as Array.prototype.sort does, for few members and for many', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.string({ unit: 'binary', maxLength: 6 }), { maxLength: 40 }), (names) => {
        const obj = Object.fromEntries(names.map((n, i) => [n, i]));
        const order = Object.keys(JSON.parse(canonicalize(obj)) as object);
        // Integer-like names come first in any object's own key order; compare the written order instead.
        const written = [...canonicalize(obj).matchAll(/"((?:[^"\\]|\\.)*)":/g)].map((m) => JSON.parse(`"${m[1]}"`) as string);
        expect(written).toEqual(Object.keys(obj).sort());
        expect(order.length).toBe(names.length);
      }),
    );
  });

  it('writes a value, in order or not, as the full writer does', () => {
    const sortedCopy = (v: unknown): unknown =>
      Array.isArray(v)
        ? v.map(sortedCopy)
        : v !== null && typeof v === 'object'
          ? Object.fromEntries(
              Object.keys(v)
                .sort()
                .map((k) => [k, sortedCopy((v as Record<string, unknown>)[k])]),
            )
          : v;
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: 'binary' }), fc.boolean(), (value, sort) => {
        const ordered = sort ? sortedCopy(value) : value;
        // A toJSON at the top sends the whole value through the full writer.
        expect(canonicalize(ordered)).toBe(canonicalize({ toJSON: () => ordered }));
      }),
      { numRuns: 300 },
    );
    expect(canonicalize({ a: 1, b: [{ c: 'é', d: -0 }] })).toBe('{"a":1,"b":[{"c":"é","d":0}]}');
    expect(canonicalize({ b: [{ d: 2, c: 1 }], a: { 10: 'x', 9: 'y' } })).toBe('{"a":{"10":"x","9":"y"},"b":[{"c":1,"d":2}]}');
    expect(canonicalize(JSON.parse('{"z":1,"__proto__":{"x":1},"a":2}'))).toBe('{"__proto__":{"x":1},"a":2,"z":1}');
    expect(() => canonicalize({ a: 'x\udc00' })).toThrow(CanonicalizationError);
    expect(() => canonicalize({ a: [Number.NaN] })).toThrow(CanonicalizationError);
  });

  it('does not depend on member order', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string({ unit: 'binary' }), fc.jsonValue()), (obj) => {
        const reversed = Object.fromEntries(Object.entries(obj).reverse());
        expect(canonicalize(reversed)).toBe(canonicalize(obj));
      }),
    );
  });
});
