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
  // Most values need at most their members put in order: then JSON.stringify writes the canonical text.
  const inOrder = ordered(value, 0);
  if (inOrder !== SLOW) return JSON.stringify(inOrder);
  const out: string[] = [];
  write(value, out);
  return out.join('');
}

/** What ordered() gives for a value that only the full writer can canonicalize. */
const SLOW: unique symbol = Symbol('slow');
/** Nesting beyond which ordered() gives way to the full writer. */
const QUICK_DEPTH = 32;
/** A member name that an object keeps ahead of the others, whatever the order of insertion. */
const ARRAY_INDEX = /^(?:0|[1-9][0-9]{0,9})$/;

/** Adds a member to a copy in order; false for a name an object would put ahead of the others, or would not keep as a member. */
function copyInto(copy: Record<string, unknown>, key: string, value: unknown): boolean {
  if (key === '__proto__' || ARRAY_INDEX.test(key)) return false;
  copy[key] = value;
  return true;
}

/**
 * `value` itself when JSON.stringify writes it canonically, a copy with its members in the order
 * of their UTF-16 code units when only their order is wrong, or SLOW for what JSON.stringify
 * treats apart from RFC 8785 (toJSON, undefined, functions, symbols, bigints, non-finite numbers,
 * lone surrogates) and for names a copy could not put in order (array indices).
 */
function ordered(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case 'string':
      return isWellFormed(value) ? value : SLOW;
    case 'number':
      return Number.isFinite(value) ? value : SLOW;
    case 'boolean':
      return value;
    case 'object': {
      if (value === null) return value;
      if (depth >= QUICK_DEPTH) return SLOW;
      if (Array.isArray(value)) {
        let copy: unknown[] | undefined;
        for (let i = 0; i < value.length; i++) {
          const item: unknown = value[i];
          const o = ordered(item, depth + 1);
          if (o === SLOW) return SLOW;
          if (o !== item) (copy ??= value.slice())[i] = o;
        }
        return copy ?? value;
      }
      if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return SLOW;
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj);
      let inPlace = true;
      for (let i = 1; i < keys.length && inPlace; i++) inPlace = keys[i - 1]! < keys[i]!;
      if (!inPlace) sortNames(keys);
      // A copy, once a member is out of order or a member's value had to be copied.
      let copy: Record<string, unknown> | undefined;
      for (let i = 0; i < keys.length; i++) {
        const key = keys[i]!;
        if (!isWellFormed(key)) return SLOW;
        const member = obj[key];
        const o = ordered(member, depth + 1);
        if (o === SLOW) return SLOW;
        if (!copy && (!inPlace || o !== member)) {
          copy = {};
          for (let j = 0; j < i; j++) if (!copyInto(copy, keys[j]!, obj[keys[j]!])) return SLOW;
        }
        if (copy && !copyInto(copy, key, o)) return SLOW;
      }
      return copy ?? obj;
    }
    default:
      return SLOW;
  }
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
  const keys = sortNames(Object.keys(obj));
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
 * Sorts member names in place in the order of their UTF-16 code units, as RFC 8785 §3.2.3 asks,
 * and returns them: what both `<` on strings and Array.prototype.sort without a comparator give.
 * The few names of most objects are sorted without the work array sort() allocates.
 */
function sortNames(names: string[]): string[] {
  if (names.length > 16) return names.sort();
  for (let i = 1; i < names.length; i++) {
    const name = names[i]!;
    let j = i - 1;
    while (j >= 0 && names[j]! > name) {
      names[j + 1] = names[j]!;
      j--;
    }
    names[j + 1] = name;
  }
  return names;
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
