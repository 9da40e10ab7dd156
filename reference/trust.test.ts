import { describe, expect, it } from 'vitest';
import { newSigningKey, signValue, trustOf, verifyValue } from './trust.ts';

describe('signatures of principals (Ed25519 over the canonical form)', () => {
  const alice = newSigningKey('example.alice');
  const mallory = newSigningKey('example.mallory');
  const trust = trustOf([alice, mallory]);
  const record = { task_id: 't1', input: { b: 2, a: 1 } };

  it('verifies a value its principal signed, whatever the member order', () => {
    const signature = signValue(record, alice);
    expect(verifyValue({ input: { a: 1, b: 2 }, signature, task_id: 't1' }, 'example.alice', signature, trust)).toBe(true);
  });

  it('refuses a changed value, another principal, an unknown principal and a malformed signature', () => {
    const signature = signValue(record, alice);
    expect(verifyValue({ ...record, task_id: 't2' }, 'example.alice', signature, trust)).toBe(false);
    expect(verifyValue(record, 'example.mallory', signature, trust)).toBe(false);
    expect(verifyValue(record, 'example.alice', signValue(record, mallory), trust)).toBe(false);
    expect(verifyValue(record, 'example.nobody', signature, trust)).toBe(false);
    expect(verifyValue(record, 'example.alice', 'x', trust)).toBe(false);
    expect(verifyValue(record, '__proto__', signature, trust)).toBe(false);
  });
});
