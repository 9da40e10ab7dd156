/**
 * base64url without padding (RFC 4648 §5), in pure code: signature values and pre-shared keys
 * travel in this form (spec: integrity#signing).
 */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const DECODE = new Int16Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DECODE[ALPHABET.charCodeAt(i)] = i;

/** Encodes bytes as base64url without padding (spec: integrity#signing). */
export function base64urlEncode(bytes: Uint8Array): string {
  let out = '';
  const n = bytes.length;
  let i = 0;
  for (; i + 2 < n; i += 3) {
    const v = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += ALPHABET[v >>> 18]! + ALPHABET[(v >>> 12) & 63]! + ALPHABET[(v >>> 6) & 63]! + ALPHABET[v & 63]!;
  }
  if (n - i === 1) {
    const v = bytes[i]! << 16;
    out += ALPHABET[v >>> 18]! + ALPHABET[(v >>> 12) & 63]!;
  } else if (n - i === 2) {
    const v = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    out += ALPHABET[v >>> 18]! + ALPHABET[(v >>> 12) & 63]! + ALPHABET[(v >>> 6) & 63]!;
  }
  return out;
}

/**
 * Decodes strict base64url without padding; returns null for any other text (padding, other
 * alphabets, an impossible length, or non-zero trailing bits), so each value has one spelling
 * (spec: integrity#signing).
 */
export function base64urlDecode(text: string): Uint8Array | null {
  const n = text.length;
  if (n % 4 === 1) return null;
  const out = new Uint8Array(Math.floor((n * 3) / 4));
  let o = 0;
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    const v = c < 128 ? DECODE[c]! : -1;
    if (v < 0) return null;
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >>> bits) & 0xff;
      acc &= (1 << bits) - 1;
    }
  }
  if (acc !== 0) return null; // non-canonical: the unused trailing bits must be zero
  return out;
}
