import { describe, expect, it } from 'vitest';
import { newSigningKey, trustOf } from '../trust.ts';
import { entryProblem, type RegistryEntry } from './entry.ts';
import { refusalOf, signEntry } from './signature.ts';

const entry = (agentId: string, over: Partial<RegistryEntry> = {}): RegistryEntry => ({
  agent_id: agentId,
  instance: 'i-1',
  card: {
    agent_id: agentId,
    name: agentId,
    description: 'a signed agent',
    capabilities: [],
    limits: { max_concurrent_tasks: 2, max_task_seconds: 60, max_message_bytes: 1048576 },
  },
  versions: ['1.0'],
  endpoints: [{ binding: 'nats', url: `nats://127.0.0.1:4222/${agentId}` }],
  load: { running_tasks: 0, max_concurrent_tasks: 2 },
  heartbeat_ms: 1000,
  ttl_ms: 3000,
  started_at: '2026-12-04T10:00:00.000Z',
  updated_at: '2026-12-04T10:00:05.000Z',
  ...over,
});

describe('signed registry entries (spec: registry#signatures)', () => {
  const coder = newSigningKey('coder.one');
  const mallory = newSigningKey('mallory');
  const trust = trustOf([coder, mallory]);
  const at = new Date('2026-12-04T10:00:05.200Z');

  it('verifies an entry its agent signed, the signature a valid member of the entry (TAP-REG-052, TAP-REG-053)', () => {
    const signed = signEntry(entry('coder.one'), coder);
    expect(signed.signature).toMatch(/^[A-Za-z0-9_-]{86}$/);
    expect(entryProblem(signed)).toBeUndefined();
    expect(refusalOf(signed, at, trust)).toBeUndefined();
    // Signing again replaces the signature: it never covers itself.
    expect(signEntry(signed, coder).signature).toBe(signed.signature);
    // Member order does not matter: the signature covers the canonical form.
    const reordered = Object.fromEntries(Object.entries(signed).reverse()) as unknown as RegistryEntry;
    expect(refusalOf(reordered, at, trust)).toBeUndefined();
  });

  it('refuses an entry changed after signing: another endpoint, load or instance (TAP-REG-053)', () => {
    const signed = signEntry(entry('coder.one'), coder);
    for (const changed of [
      { ...signed, endpoints: [{ binding: 'nats' as const, url: 'nats://127.0.0.1:9/coder.one' }] },
      { ...signed, load: { running_tasks: 1, max_concurrent_tasks: 2 } },
      { ...signed, instance: 'i-2' },
    ])
      expect(refusalOf(changed, at, trust)).toMatch(/does not verify with the key of coder\.one/);
  });

  it('refuses an entry signed by another principal, one not signed, and one whose agent the trust file does not name (TAP-REG-053)', () => {
    expect(refusalOf(signEntry(entry('coder.one'), mallory), at, trust)).toMatch(/does not verify with the key of coder\.one/);
    expect(refusalOf(entry('coder.one'), at, trust)).toMatch(/not signed, and the trust file has a key for coder\.one/);
    expect(refusalOf(signEntry(entry('coder.two'), mallory), at, trust)).toMatch(/the trust file has no key for coder\.two/);
    expect(refusalOf({ ...entry('coder.one'), signature: 'not a signature' }, at, trust)).toMatch(/does not verify/);
  });

  it('refuses a signed write replayed later than its own lifetime, by the store clock (TAP-REG-054)', () => {
    const signed = signEntry(entry('coder.one'), coder);
    expect(refusalOf(signed, new Date('2026-12-04T10:00:08.000Z'), trust)).toBeUndefined();
    expect(refusalOf(signed, new Date('2026-12-04T10:00:08.001Z'), trust)).toMatch(
      /a replayed write: it was signed at 2026-12-04T10:00:05.000Z, 3001 ms before the store took it, more than its ttl_ms \(3000\)/,
    );
  });
});
