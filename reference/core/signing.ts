/**
 * Message integrity: HMAC-SHA256 over the RFC 8785 form of the whole message with only
 * `signature.value` removed (spec: integrity#signing). The MAC function is injected, so this module
 * stays free of platform crypto; reference/crypto.ts supplies one.
 */
import { base64urlDecode, base64urlEncode } from './base64url.ts';
import { extended } from './extended.ts';
import { canonicalBytes } from './jcs.ts';

/** An HMAC-SHA256 implementation: the 32-byte MAC of data under key. */
export type Hmac = (key: Uint8Array, data: Uint8Array) => Uint8Array;

/** The only MAC algorithm TAP 1.0 defines (spec: integrity#signing). */
export const SIGNATURE_ALG = 'hmac-sha256';

/** The shortest pre-shared key accepted, in bytes (spec: integrity#keys). */
export const MIN_KEY_BYTES = 32;

type Signed = { signature?: { alg?: unknown; key_id?: unknown; value?: unknown } };

/** Throws unless the key is at least 32 bytes (spec: integrity#keys). */
export function assertKey(key: Uint8Array): void {
  if (key.length < MIN_KEY_BYTES)
    throw new RangeError(`a pre-shared key needs at least ${MIN_KEY_BYTES} bytes, this one has ${key.length}`);
}

/** Decodes a pre-shared key given as base64url; throws if it is not base64url or shorter than 32 bytes (spec: integrity#keys). */
export function parseKey(text: string): Uint8Array {
  const key = base64urlDecode(text.trim());
  if (!key) throw new RangeError('the pre-shared key is not base64url without padding');
  assertKey(key);
  return key;
}

/**
 * The bytes the MAC covers: the UTF-8 RFC 8785 form of the message with `signature.value`
 * removed; `signature.alg`, `signature.key_id` and every other member, known or not, stay in
 * (spec: integrity#signing). Throws CanonicalizationError for a message that is not I-JSON.
 */
export function signingInput(msg: object): Uint8Array {
  const sig = (msg as Signed).signature;
  if (sig === null || typeof sig !== 'object' || !('value' in sig)) return canonicalBytes(msg);
  const { value: _value, ...rest } = sig;
  return canonicalBytes(extended(msg, { signature: rest }));
}

/** Returns a copy of msg carrying `signature: { alg, key_id, value }` (spec: integrity#signing). */
export function sign<T extends object>(
  msg: T,
  key: Uint8Array,
  keyId: string,
  hmac: Hmac,
): T & { signature: { alg: 'hmac-sha256'; key_id: string; value: string } } {
  assertKey(key);
  const unsigned = extended(msg, { signature: { alg: SIGNATURE_ALG, key_id: keyId } });
  const value = base64urlEncode(hmac(key, canonicalBytes(unsigned)));
  return extended(msg, { signature: { alg: SIGNATURE_ALG, key_id: keyId, value } }) as T & {
    signature: { alg: 'hmac-sha256'; key_id: string; value: string };
  };
}

/** Why verification failed, or 'ok'. */
export type VerifyOutcome = 'ok' | 'missing' | 'malformed' | 'wrong-key' | 'mismatch';

/**
 * Checks a message's signature in constant time. With `keyId` the signature must also name that
 * key. Never throws (spec: integrity#verification).
 */
export function checkSignature(msg: object, key: Uint8Array, hmac: Hmac, keyId?: string): VerifyOutcome {
  const sig = (msg as Signed).signature;
  if (sig === undefined) return 'missing';
  if (
    sig === null ||
    typeof sig !== 'object' ||
    sig.alg !== SIGNATURE_ALG ||
    typeof sig.value !== 'string' ||
    typeof sig.key_id !== 'string'
  ) {
    return 'malformed';
  }
  if (keyId !== undefined && sig.key_id !== keyId) return 'wrong-key';
  const given = sig.value.length === 43 ? base64urlDecode(sig.value) : null;
  if (!given) return 'malformed';
  let input: Uint8Array;
  try {
    input = signingInput(msg);
  } catch {
    return 'malformed';
  }
  if (key.length < MIN_KEY_BYTES) return 'mismatch';
  return constantTimeEqual(hmac(key, input), given) ? 'ok' : 'mismatch';
}

/** True when msg carries a valid signature under key (spec: integrity#verification). */
export function verify(msg: object, key: Uint8Array, hmac: Hmac, keyId?: string): boolean {
  return checkSignature(msg, key, hmac, keyId) === 'ok';
}

/** Compares two byte strings in time that depends only on their lengths (spec: integrity#verification). */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}
