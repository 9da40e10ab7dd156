import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkMac, fromB64u, jcs, macOf, signMessage } from '../mac.ts';
import { repoPath } from '../paths.ts';

const example = JSON.parse(readFileSync(repoPath('spec/1.0/examples/signing-example.json'), 'utf8'));

describe('the harness MAC (spec: integrity#worked-example)', () => {
  it('canonicalizes the worked example byte for byte', () => {
    expect(jcs(example.message_unsigned)).toBe(example.canonical);
    expect(Buffer.byteLength(jcs(example.message_unsigned))).toBe(example.canonical_utf8_bytes);
  });

  it('computes the worked example signature value', () => {
    const key = fromB64u(example.key_b64url)!;
    expect(macOf(example.message_unsigned, key)).toBe(example.signature_value);
    const signed = signMessage({ ...example.message_unsigned, signature: undefined }, key, example.key_id);
    expect((signed.signature as { value: string }).value).toBe(example.signature_value);
    expect(checkMac(example.message_signed, key, example.key_id)).toBeNull();
  });

  it('refuses a changed member, another key id and a missing signature', () => {
    const key = fromB64u(example.key_b64url)!;
    expect(checkMac({ ...example.message_signed, task_id: 't-43' }, key, example.key_id)).toMatch(/does not match/);
    expect(checkMac(example.message_signed, key, 'other')).toMatch(/key_id/);
    expect(checkMac({ ...example.message_signed, signature: undefined }, key, example.key_id)).toBe('no signature');
  });

  it('sorts members by UTF-16 code units', () => {
    expect(jcs({ b: 1, a: [true, null], '\u00e9': 'x', Z: 2 })).toBe('{"Z":2,"a":[true,null],"b":1,"é":"x"}');
  });
});
