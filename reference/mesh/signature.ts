/**
 * Signed registry entries: an agent with a signing key signs every write of its entry, and a
 * reader holding a trust file refuses any entry that its agent's key did not sign, or that
 * replays an old write (spec: registry#signatures). Pure: no I/O, no NATS.
 */
import { signValue, verifyValue, type SigningKey, type TrustFile } from '../trust.ts';
import type { RegistryEntry } from './entry.ts';

/** The entry with its `signature`: the agent's over the entry's canonical form without it (TAP-REG-052). */
export function signEntry(entry: RegistryEntry, key: SigningKey): RegistryEntry {
  const { signature: _old, ...unsigned } = entry;
  return { ...unsigned, signature: signValue(unsigned as unknown as Record<string, unknown>, key) };
}

/** Whether the trust file names a key for `agentId` (an own member only: never `__proto__` and the like). */
export function trusts(trust: TrustFile, agentId: string): boolean {
  return Object.hasOwn(trust.principals, agentId);
}

/**
 * Why a reader holding `trust` refuses an entry written at `writtenAt`, or undefined when it
 * verifies: signed by the key the trust file binds to its agent id (TAP-REG-053), and no older
 * than its own lifetime when it was written (TAP-REG-054).
 */
export function refusalOf(entry: RegistryEntry, writtenAt: Date, trust: TrustFile): string | undefined {
  if (!trusts(trust, entry.agent_id)) return `the trust file has no key for ${entry.agent_id}`;
  if (entry.signature === undefined) return `the entry is not signed, and the trust file has a key for ${entry.agent_id}`;
  if (!verifyValue(entry as unknown as Record<string, unknown>, entry.agent_id, entry.signature, trust))
    return `the signature does not verify with the key of ${entry.agent_id}: the entry was forged, changed, or signed by another principal`;
  const age = writtenAt.getTime() - Date.parse(entry.updated_at);
  if (age > entry.ttl_ms)
    return `a replayed write: it was signed at ${entry.updated_at}, ${age} ms before the store took it, more than its ttl_ms (${entry.ttl_ms})`;
  return undefined;
}
