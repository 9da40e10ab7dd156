import { describe, expect, it } from 'vitest';
import example from '../../spec/1.0/examples/signing-example.json' with { type: 'json' };
import { hmacSha256, randomBytes } from '../crypto.ts';
import { base64urlEncode } from './base64url.ts';
import { assertKey, checkSignature, constantTimeEqual, parseKey, sign, signingInput, verify } from './signing.ts';
import { samplePing } from './samples.testkit.ts';

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
const key = parseKey(example.key_b64url);

/** Every path to a leaf (or empty container) of a JSON value, except signature.value. */
function leafPaths(value: unknown, prefix: string[] = []): string[][] {
  if (value === null || typeof value !== 'object') return [prefix];
  const entries = Object.entries(value as object);
  if (entries.length === 0) return [prefix];
  return entries.flatMap(([k, v]) =>
    prefix.length === 1 && prefix[0] === 'signature' && k === 'value' ? [] : leafPaths(v, [...prefix, k]),
  );
}

function tampered(msg: object, path: string[]): object {
  const copy = structuredClone(msg) as Record<string, unknown>;
  let node: Record<string, unknown> = copy;
  for (const k of path.slice(0, -1)) node = node[k] as Record<string, unknown>;
  const last = path[path.length - 1]!;
  const v = node[last];
  node[last] =
    typeof v === 'string'
      ? v + 'x'
      : typeof v === 'number'
        ? v + 1
        : typeof v === 'boolean'
          ? !v
          : Array.isArray(v)
            ? [...v, 0]
            : v && typeof v === 'object'
              ? { ...v, x: 1 }
              : 0;
  return copy;
}

describe('signing', () => {
  it('reproduces the spec worked example byte for byte (spec: integrity#worked-example)', () => {
    expect(new TextDecoder().decode(signingInput(example.message_unsigned))).toBe(example.canonical);
    expect(hex(hmacSha256(key, signingInput(example.message_unsigned)))).toBe(example.hmac_hex);
    const { signature: _unsigned, ...bare } = example.message_unsigned;
    const signed = sign(bare, key, example.key_id, hmacSha256);
    expect(signed.signature.value).toBe(example.signature_value);
    expect(signed).toEqual(example.message_signed);
    expect(verify(example.message_signed, key, hmacSha256)).toBe(true);
  });

  it('covers everything but signature.value: alg and key_id stay in the input (spec: integrity#signing)', () => {
    expect(signingInput(example.message_signed)).toEqual(signingInput(example.message_unsigned));
    const text = new TextDecoder().decode(signingInput(example.message_signed));
    expect(text).toContain('"signature":{"alg":"hmac-sha256","key_id":"acme.coordinator.k1"}');
    expect(text).not.toContain(example.signature_value);
  });

  it('round-trips: a signed message verifies with its key and no other (spec: integrity#verification)', () => {
    const k = randomBytes(32);
    const signed = sign(samplePing(), k, 'k1', hmacSha256);
    expect(signed.signature.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(verify(signed, k, hmacSha256)).toBe(true);
    expect(verify(signed, randomBytes(32), hmacSha256)).toBe(false);
    expect(checkSignature(signed, k, hmacSha256, 'k2')).toBe('wrong-key');
  });

  it('fails verification when any member changes, signature.alg and key_id included (spec: integrity#verification)', () => {
    const paths = leafPaths(example.message_signed);
    expect(paths.length).toBeGreaterThan(15);
    for (const path of paths) {
      expect(verify(tampered(example.message_signed, path), key, hmacSha256), path.join('/')).toBe(false);
    }
  });

  it('fails verification when an unknown member is added or a member removed (spec: envelope#extensibility)', () => {
    const signed = example.message_signed as Record<string, unknown>;
    expect(verify({ ...signed, x_trace: 'added' }, key, hmacSha256)).toBe(false);
    expect(verify({ ...signed, payload: { ...(signed.payload as object), 'x-extra': true } }, key, hmacSha256)).toBe(false);
    const { idempotency_key: _dropped, ...rest } = signed;
    expect(verify(rest, key, hmacSha256)).toBe(false);
  });

  it('verifies what was parsed, whatever the member order and white space on the wire', () => {
    const text = JSON.stringify(Object.fromEntries(Object.entries(example.message_signed).reverse()), null, 3);
    expect(verify(JSON.parse(text), key, hmacSha256)).toBe(true);
  });

  it('covers unknown members when signing', () => {
    const k = randomBytes(32);
    const signed = sign(samplePing({ x_unknown: { deep: [1, 2] } }), k, 'k1', hmacSha256);
    expect(verify(signed, k, hmacSha256)).toBe(true);
    expect(verify({ ...signed, x_unknown: { deep: [1, 3] } }, k, hmacSha256)).toBe(false);
  });

  it.each([
    ['missing', undefined, 'missing'],
    ['null', null, 'malformed'],
    ['another alg', { alg: 'hmac-sha512', key_id: 'k', value: 'A'.repeat(43) }, 'malformed'],
    ['padded value', { alg: 'hmac-sha256', key_id: 'k', value: 'A'.repeat(42) + '=' }, 'malformed'],
    ['short value', { alg: 'hmac-sha256', key_id: 'k', value: 'AAAA' }, 'malformed'],
    ['non-canonical value', { alg: 'hmac-sha256', key_id: 'k', value: 'A'.repeat(42) + 'B' }, 'malformed'],
    ['wrong value', { alg: 'hmac-sha256', key_id: 'k', value: 'A'.repeat(43) }, 'mismatch'],
  ])('reports a %s signature without throwing', (_name, signature, outcome) => {
    expect(checkSignature(samplePing({ signature }), key, hmacSha256)).toBe(outcome);
  });

  it('reports a message that has no canonical form as malformed', () => {
    const signed = sign(samplePing(), key, 'k1', hmacSha256);
    expect(checkSignature({ ...signed, bad: 'a\ud800' }, key, hmacSha256)).toBe('malformed');
  });

  it('refuses keys shorter than 32 bytes (spec: integrity#keys)', () => {
    expect(() => assertKey(new Uint8Array(31))).toThrow(/32 bytes/);
    expect(() => sign(samplePing(), new Uint8Array(16), 'k1', hmacSha256)).toThrow(RangeError);
    expect(() => parseKey(base64urlEncode(new Uint8Array(31)))).toThrow(RangeError);
    expect(() => parseKey('not base64url!')).toThrow(RangeError);
    expect(checkSignature(sign(samplePing(), key, 'k1', hmacSha256), new Uint8Array(16), hmacSha256)).toBe('mismatch');
    expect(parseKey(example.key_b64url)).toEqual(Uint8Array.from({ length: 32 }, (_, i) => i));
  });

  it('compares MACs in constant time over their whole length (spec: integrity#verification)', () => {
    const a = Uint8Array.of(1, 2, 3);
    expect(constantTimeEqual(a, Uint8Array.of(1, 2, 3))).toBe(true);
    expect(constantTimeEqual(a, Uint8Array.of(1, 2, 4))).toBe(false);
    expect(constantTimeEqual(a, Uint8Array.of(0, 2, 3))).toBe(false);
    expect(constantTimeEqual(a, Uint8Array.of(1, 2))).toBe(false);
  });
});
