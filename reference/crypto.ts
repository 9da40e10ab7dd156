/**
 * The platform crypto leaf: HMAC-SHA256 and random bytes from node:crypto, injected into the
 * pure core (spec: integrity#signing).
 */
import { createHmac, randomBytes as nodeRandomBytes } from 'node:crypto';
import type { Hmac } from './core/signing.ts';
import type { RandomSource } from './core/ids.ts';

/** HMAC-SHA256 of data under key (spec: integrity#signing). */
export const hmacSha256: Hmac = (key, data) => {
  const digest = createHmac('sha256', key).update(data).digest();
  return new Uint8Array(digest.buffer, digest.byteOffset, digest.byteLength);
};

/** The name the shared contracts use for hmacSha256. */
export const nodeHmac: Hmac = hmacSha256;

/** n bytes from the platform CSPRNG. */
export const randomBytes: RandomSource = (n) => {
  const bytes = nodeRandomBytes(n);
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
};
