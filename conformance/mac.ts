/**
 * The harness's own RFC 8785 canonical form and HMAC-SHA256 message MAC (spec: integrity#mac).
 * Written independently of reference/core so that the two cross-check each other: an agent
 * built on a buggy canonicalizer fails here.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** RFC 8785 canonical JSON text of `value`. */
export function jcs(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`${value} has no JSON form`);
      return JSON.stringify(value);
    case 'string':
      return JSON.stringify(value);
    case 'object': {
      if (Array.isArray(value)) return `[${value.map((v) => jcs(v === undefined ? null : v)).join(',')}]`;
      const obj = value as Record<string, unknown>;
      // Sorted by UTF-16 code units, which is what the default sort compares.
      const keys = Object.keys(obj)
        .filter((k) => obj[k] !== undefined)
        .sort();
      return `{${keys.map((k) => `${JSON.stringify(k)}:${jcs(obj[k])}`).join(',')}}`;
    }
    default:
      throw new TypeError(`a ${typeof value} has no JSON form`);
  }
}

/** base64url without padding. */
export function b64u(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64url');
}

/** Decodes base64url (padding tolerated); null if it is not base64url. */
export function fromB64u(text: string): Uint8Array | null {
  const t = text.trim().replace(/=+$/, '');
  if (!/^[A-Za-z0-9_-]*$/.test(t)) return null;
  return new Uint8Array(Buffer.from(t, 'base64url'));
}

/** A fresh 32-byte pre-shared key. */
export function newKey(): Uint8Array {
  return new Uint8Array(randomBytes(32));
}

/** The MAC value of a message: HMAC-SHA256 over JCS of the message with `signature.value` removed. */
export function macOf(msg: Record<string, unknown>, key: Uint8Array): string {
  const sig = msg.signature as Record<string, unknown> | undefined;
  const input: Record<string, unknown> = { ...msg };
  if (sig && typeof sig === 'object') {
    const { value: _v, ...rest } = sig;
    input.signature = rest;
  }
  return b64u(createHmac('sha256', key).update(jcs(input), 'utf8').digest());
}

/** Returns a copy of `msg` signed with `key` under `keyId`. */
export function signMessage<T extends Record<string, unknown>>(msg: T, key: Uint8Array, keyId: string): T {
  const withSig = { ...msg, signature: { alg: 'hmac-sha256', key_id: keyId } };
  return { ...msg, signature: { alg: 'hmac-sha256', key_id: keyId, value: macOf(withSig, key) } };
}

/** Checks a received message's signature; returns why it is bad, or null when good. */
export function checkMac(msg: Record<string, unknown>, key: Uint8Array, keyId: string): string | null {
  const sig = msg.signature as Record<string, unknown> | undefined;
  if (!sig || typeof sig !== 'object') return 'no signature';
  if (sig.alg !== 'hmac-sha256') return `signature.alg is ${JSON.stringify(sig.alg)}, not "hmac-sha256"`;
  if (sig.key_id !== keyId) return `signature.key_id is ${JSON.stringify(sig.key_id)}, not "${keyId}"`;
  if (typeof sig.value !== 'string') return 'signature.value is not a string';
  let expected: string;
  try {
    expected = macOf(msg, key);
  } catch (err) {
    return `the message has no canonical form: ${(err as Error).message}`;
  }
  const a = Buffer.from(expected);
  const b = Buffer.from(sig.value);
  if (a.length !== b.length || !timingSafeEqual(a, b)) return 'signature.value does not match the MAC of the message';
  return null;
}
