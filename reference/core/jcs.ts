/**
 * The JSON Canonicalization Scheme (RFC 8785): the one byte sequence a JSON value signs and
 * compares as (spec: integrity#signing).
 */

/** Thrown for a value that has no canonical form: a non-finite number, a lone surrogate, a bigint. */
export class CanonicalizationError extends Error {
  override name = 'CanonicalizationError';
}

/**
 * The RFC 8785 canonical text of a JSON value: object members sorted by the UTF-16 code units
 * of their names, no whitespace, numbers and strings as ECMAScript's JSON.stringify writes them.
 * Like JSON.stringify it honours toJSON and skips undefined, function and symbol members; an
 * undefined array element is null (spec: integrity#signing).
 */
export function canonicalize(value: unknown): string {
  const out: string[] = [];
  write(value, out);
  return out.join('');
}

/** canonicalize() encoded as UTF-8: the bytes a MAC covers (spec: integrity#signing). */
export function canonicalBytes(value: unknown): Uint8Array {
  return new TextEncoder().encode(canonicalize(value));
}

function write(value: unknown, out: string[]): void {
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    value = (value as { toJSON(): unknown }).toJSON();
  }
  switch (typeof value) {
    case 'string':
      out.push(quote(value));
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new CanonicalizationError(`${value} has no JSON form`);
      out.push(JSON.stringify(value)); // ECMAScript Number::toString; -0 becomes "0"
      return;
    case 'boolean':
      out.push(value ? 'true' : 'false');
      return;
    case 'bigint':
      throw new CanonicalizationError('a bigint has no JSON form');
    case 'object':
      if (value === null) out.push('null');
      else if (Array.isArray(value)) writeArray(value, out);
      else writeObject(value as Record<string, unknown>, out);
      return;
    default:
      out.push('null'); // undefined, functions and symbols reach here only as array elements
  }
}

function writeArray(items: readonly unknown[], out: string[]): void {
  out.push('[');
  for (let i = 0; i < items.length; i++) {
    if (i > 0) out.push(',');
    write(items[i], out);
  }
  out.push(']');
}

function writeObject(obj: Record<string, unknown>, out: string[]): void {
  const keys = sortedKeys(obj);
  out.push('{');
  let first = true;
  for (const key of keys) {
    const v = obj[key];
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
    if (!first) out.push(',');
    first = false;
    out.push(quote(key), ':');
    write(v, out);
  }
  out.push('}');
}

/**
 * The member names in the order of their UTF-16 code units, as RFC 8785 §3.2.3 asks: what both
 * `<` on strings and Array.prototype.sort without a comparator give. The few names of most
 * objects are sorted in place, without the work array sort() allocates.
 */
function sortedKeys(obj: Record<string, unknown>): string[] {
  const keys = Object.keys(obj);
  if (keys.length > 16) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!;
    let j = i - 1;
    while (j >= 0 && keys[j]! > key) {
      keys[j + 1] = keys[j]!;
      j--;
    }
    keys[j + 1] = key;
  }
  return keys;
}

function quote(s: string): string {
  if (!isWellFormed(s)) throw new CanonicalizationError('a string with a lone surrogate has no canonical form');
  return JSON.stringify(s); // escapes exactly as RFC 8785 §3.2.2.2: \b \t \n \f \r \" \\ and lowercase \u00xx
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const nativeWellFormed = (String.prototype as { isWellFormed?: () => boolean }).isWellFormed;

/** True when the string has no lone surrogate (I-JSON, RFC 7493 §2.1) (spec: envelope#encoding). */
export function isWellFormed(s: string): boolean {
  return nativeWellFormed ? nativeWellFormed.call(s) : !LONE_SURROGATE.test(s);
}
