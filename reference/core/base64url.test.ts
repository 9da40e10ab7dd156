import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { base64urlDecode, base64urlEncode } from './base64url.ts';

const ascii = (s: string) => new TextEncoder().encode(s);

describe('base64url', () => {
  it.each([
    ['', ''],
    ['f', 'Zg'],
    ['fo', 'Zm8'],
    ['foo', 'Zm9v'],
    ['foob', 'Zm9vYg'],
    ['fooba', 'Zm9vYmE'],
    ['foobar', 'Zm9vYmFy'],
  ])('encodes the RFC 4648 vector %j as %j without padding (spec: integrity#signing)', (plain, encoded) => {
    expect(base64urlEncode(ascii(plain))).toBe(encoded);
    expect(base64urlDecode(encoded)).toEqual(ascii(plain));
  });

  it('uses "-" and "_" where base64 uses "+" and "/"', () => {
    expect(base64urlEncode(Uint8Array.of(0xfb, 0xff, 0xbf))).toBe('-_-_');
    expect(base64urlDecode('-_-_')).toEqual(Uint8Array.of(0xfb, 0xff, 0xbf));
  });

  it.each([['Zg=='], ['Zm9v+A'], ['Zm9v/A'], ['Z'], ['Zm9vY'], ['Zh'], ['Zm9'], ['Zm 9v'], ['é']])(
    'refuses %j: padding, another alphabet, an impossible length or non-zero trailing bits',
    (text) => expect(base64urlDecode(text)).toBeNull(),
  );

  it('round-trips any bytes, and each value has one spelling', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), (bytes) => {
        const text = base64urlEncode(bytes);
        expect(text).toMatch(/^[A-Za-z0-9_-]*$/);
        expect(base64urlDecode(text)).toEqual(bytes);
      }),
    );
  });
});
