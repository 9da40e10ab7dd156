/**
 * Integrity on the agent side: the pre-shared keys, each bound to one requester agent id, the
 * signature check of incoming messages and the skew window (spec: integrity).
 */
import { checkSignature, parseKey, type Hmac, type VerifyOutcome } from '../core/signing.ts';
import type { PeerKey } from './options.ts';
import type { SigningKey } from './outbound.ts';

/** A usable key: its id, bytes and the one peer it is bound to. */
export interface BoundKey extends SigningKey {
  peer: string;
}

/** The agent's pre-shared keys (spec: integrity#keys, principals). */
export class KeyRing {
  private readonly byId = new Map<string, BoundKey>();

  /** Decodes every key; throws with the key's id when one is not base64url or shorter than 32 bytes. */
  constructor(keys: PeerKey[]) {
    for (const k of keys) {
      let bytes: Uint8Array;
      try {
        bytes = parseKey(k.key);
      } catch (err) {
        throw new Error(`key ${k.key_id}: ${(err as Error).message}`);
      }
      if (this.byId.has(k.key_id)) throw new Error(`key ${k.key_id} is given twice`);
      this.byId.set(k.key_id, { keyId: k.key_id, key: bytes, peer: k.peer });
    }
  }

  /** The key named `keyId`, if the agent holds it. */
  get(keyId: string): BoundKey | undefined {
    return this.byId.get(keyId);
  }

  /** Every key by id, as the handshake machine reads them. */
  map(): ReadonlyMap<string, BoundKey> {
    return this.byId;
  }

  /** True when the agent holds a key bound to this requester: it then refuses integrity "none" from it. */
  hasKeyFor(peer: string): boolean {
    for (const k of this.byId.values()) if (k.peer === peer) return true;
    return false;
  }
}

/** Checks an incoming message against the session key (spec: integrity#verification). */
export function verifyIncoming(msg: object, key: SigningKey, hmac: Hmac): VerifyOutcome {
  return checkSignature(msg, key.key, hmac, key.keyId);
}

/** True when a timestamp lies outside the skew window around `now` (spec: integrity#skew). */
export function outsideSkew(timestamp: unknown, now: number, skewMs: number): boolean {
  if (typeof timestamp !== 'string') return true;
  const t = Date.parse(timestamp);
  return !Number.isFinite(t) || Math.abs(t - now) > skewMs;
}
