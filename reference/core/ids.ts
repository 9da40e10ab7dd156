/**
 * Identifiers drawn from an injected random source: message ids, session ids and resume tokens
 * (spec: handshake#ack).
 */
import { base64urlEncode } from './base64url.ts';

/** Returns n random bytes; reference/crypto.ts provides one backed by the platform CSPRNG. */
export type RandomSource = (n: number) => Uint8Array;

/** The platform CSPRNG through the Web Crypto global (no module import), for callers that inject none. */
export const webRandom: RandomSource = (n) => globalThis.crypto.getRandomValues(new Uint8Array(n));

/**
 * A source that draws `poolBytes` at a time from `source` and hands them out in slices: one
 * CSPRNG call per 256 message ids instead of one each. The bytes are still the source's, each
 * handed out once.
 */
export function pooled(source: RandomSource, poolBytes = 4096): RandomSource {
  let pool: Uint8Array = new Uint8Array(0);
  let at = 0;
  return (n) => {
    if (n > poolBytes) return source(n);
    if (at + n > pool.length) {
      pool = source(poolBytes);
      at = 0;
    }
    at += n;
    return pool.slice(at - n, at);
  };
}

/** A message id: 128 random bits, 22 base64url characters, unique per sender in practice (spec: envelope#message-id). */
export function newMessageId(random: RandomSource = webRandom): string {
  return base64urlEncode(random(16));
}

/**
 * The message ids of one sender: a random prefix of 96 bits (16 base64url characters) drawn
 * once, then "." and a counter in base 36, so no two ids of the source repeat and ids of two
 * sources collide only if their prefixes do (spec: envelope#message-id: "a counter prefixed by a
 * per-session random string is enough").
 */
export function messageIds(random: RandomSource = webRandom): () => string {
  const prefix = base64urlEncode(random(12));
  let n = 0;
  return () => `${prefix}.${(++n).toString(36)}`;
}

/** A session id: 128 random bits as 22 base64url characters (spec: handshake#ack). */
export function newSessionId(random: RandomSource = webRandom): string {
  return base64urlEncode(random(16));
}

/** A resume token: 256 random bits as 43 base64url characters, a secret bound to one session (spec: handshake#ack). */
export function newResumeToken(random: RandomSource = webRandom): string {
  return base64urlEncode(random(32));
}
