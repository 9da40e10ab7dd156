/**
 * What JSON.parse cannot report about a text it accepted: duplicate member names, and I-JSON
 * violations (RFC 7493) — integers beyond ±(2^53−1), an integer being a number written without a
 * fraction or exponent part (`1e308` is a number of the double range, not an integer), numbers
 * beyond the double range (`1e400`) and lone surrogates (spec: envelope#encoding).
 */
import { isWellFormed } from './jcs.ts';
import { escapePointer } from './validate.ts';

/** The largest integer I-JSON allows in magnitude: 2^53 − 1 (spec: envelope#encoding). */
export const MAX_SAFE = 9007199254740991;

/**
 * The deepest nesting a TAP message may have, the top-level object being level 1; a deeper
 * message is refused as MALFORMED_MESSAGE (spec: limits#nesting).
 */
export const MAX_NESTING_DEPTH = 64;

/** The most a number written as an integer may be in magnitude; JSON.stringify writes 1e21 and up with an exponent. */
const EXPONENT_FROM = 1e21;

/**
 * The first I-JSON violation in a value about to be written with JSON.stringify, `depth` being the
 * level the value will have in its message (the message itself is level 1): an integer beyond
 * ±(2^53−1) that JSON.stringify writes as one (below 1e21), a number JSON cannot hold (NaN,
 * ±Infinity, written as null), a BigInt, a lone surrogate, or nesting deeper than MAX_NESTING_DEPTH;
 * an object with a toJSON method is judged by what it returns, as JSON.stringify writes that
 * (spec: envelope#encoding, limits#nesting). Its path is a JSON Pointer into the value.
 */
export function inspectValue(value: unknown, depth = 1): { path: string; message: string } | undefined {
  const found = walk(value, { members: 0, strings: true, written: true }, depth);
  return found ? { path: pointerOf(found.segments), message: found.message } : undefined;
}

/** What the scan found first of each kind; each path is a JSON Pointer. */
export interface ScanResult {
  /** The first container nested deeper than MAX_NESTING_DEPTH, found before anything else. */
  nesting?: { path: string; depth: number };
  /** A member name repeated in one object (reported only when duplicates are tracked). */
  duplicate?: { path: string; member: string };
  /** The first I-JSON violation. */
  ijson?: { path: string; message: string };
}

// A lone surrogate needs a \uD800–\uDFFF escape: raw text from a fatal UTF-8 decode is well-formed.
const SURROGATE_HINT = /\\u[dD][89abcdefABCDEF]/;

/**
 * Checks text that JSON.parse turned into `value`, without a second parse in the common case:
 * one walk of the value finds numbers beyond ±(2^53−1) (every double that large is an integer,
 * and 1e400 is Infinity) and, when the text has a surrogate escape, strings with lone
 * surrogates. With `duplicates`, the walk's member count is compared with the member colons in
 * the text; only a difference (a duplicate, or an escaped quote before a colon inside a string)
 * costs a full scanJson (spec: envelope#encoding, integrity#verification).
 */
export function inspectParsed(text: string, value: unknown, duplicates: boolean): ScanResult {
  const stats = { members: 0, strings: text.includes('\\u') && SURROGATE_HINT.test(text), written: false };
  const found = walk(value, stats, 1);
  if (found?.nesting) return { nesting: { path: pointerOf(found.segments), depth: MAX_NESTING_DEPTH + 1 } };
  // The walk stopped at an I-JSON finding: too deep a container further on still comes first.
  if (found && nestedDeeperThan(text, MAX_NESTING_DEPTH)) return { nesting: { path: '', depth: MAX_NESTING_DEPTH + 1 } };
  if (duplicates && (found || stats.members !== countMemberColons(text))) {
    const scanned = scanJson(text, true);
    if (scanned.duplicate) return { duplicate: scanned.duplicate };
  }
  if (!found) return {};
  // A large number is judged by how the text writes it: only an integer form is held to ±(2^53−1).
  if (found.number) {
    const scanned = scanJson(text, false);
    return scanned.ijson ? { ijson: scanned.ijson } : {};
  }
  return { ijson: { path: pointerOf(found.segments), message: found.message } };
}

interface Finding {
  segments: (string | number)[];
  message: string;
  /** The container at the end of `segments` lies deeper than MAX_NESTING_DEPTH. */
  nesting?: true;
  /** A number beyond ±(2^53−1) in a parsed value: whether it breaks the rule depends on how its text writes it. */
  number?: true;
}

/** What a walk counts and checks: members, strings for lone surrogates, numbers as JSON.stringify would write them. */
interface WalkStats {
  members: number;
  strings: boolean;
  /** The value is about to be written (not parsed from text): a number is judged by the form JSON.stringify gives it. */
  written: boolean;
}

function pointerOf(segments: (string | number)[]): string {
  return segments
    .reverse()
    .map((s) => '/' + escapePointer(String(s)))
    .join('');
}

/** Whether walking `item` can find anything: a container, a number, a BigInt, or a string when strings are checked. */
function mayHoldFinding(item: unknown, stats: WalkStats): boolean {
  return item !== null && (typeof item === 'object' || typeof item === 'number' || typeof item === 'bigint' || stats.strings);
}

// Recursion is bounded by MAX_NESTING_DEPTH: a deeper container is reported, never entered.
function walk(v: unknown, stats: WalkStats, depth: number): Finding | null {
  if (typeof v === 'number') {
    if (v <= MAX_SAFE && v >= -MAX_SAFE) return null;
    if (!stats.written) return { segments: [], message: 'a number lies outside ±(2^53−1)', number: true };
    if (!Number.isFinite(v)) return { segments: [], message: `${v} is no JSON number (JSON.stringify would write null)` };
    if (Math.abs(v) < EXPONENT_FROM) return { segments: [], message: `${JSON.stringify(v)} is an integer outside ±(2^53−1)` };
    return null;
  }
  if (typeof v === 'string') {
    return stats.strings && !isWellFormed(v) ? { segments: [], message: 'a string holds a lone surrogate' } : null;
  }
  if (v === null || typeof v !== 'object') {
    return typeof v === 'bigint' && stats.written
      ? { segments: [], message: 'a BigInt, which JSON cannot hold (JSON.stringify throws)' }
      : null;
  }
  if (depth > MAX_NESTING_DEPTH) return { segments: [], message: `nesting deeper than ${MAX_NESTING_DEPTH} levels`, nesting: true };
  // JSON.stringify writes what toJSON gives (a Date its ISO text): that is what is judged.
  if (stats.written && typeof (v as { toJSON?: unknown }).toJSON === 'function')
    return walk((v as { toJSON(): unknown }).toJSON(), stats, depth);
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const item = v[i];
      if (!mayHoldFinding(item, stats)) continue;
      const f = walk(item, stats, depth + 1);
      if (f) {
        f.segments.push(i);
        return f;
      }
    }
    return null;
  }
  const obj = v as Record<string, unknown>;
  for (const k in obj) {
    stats.members++;
    if (stats.strings && !isWellFormed(k)) return { segments: [k], message: 'a member name holds a lone surrogate' };
    const item = obj[k];
    if (!mayHoldFinding(item, stats)) continue;
    const f = walk(item, stats, depth + 1);
    if (f) {
      f.segments.push(k);
      return f;
    }
  }
  return null;
}

/** True if valid JSON text opens a container more than `limit` levels deep; one pass, no recursion. */
export function nestedDeeperThan(text: string, limit: number): boolean {
  if (openersAtMost(text, limit)) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 92) i++;
        else if (d === 34) break;
      }
    } else if (c === 91 || c === 123) {
      if (++depth > limit) return true;
    } else if (c === 93 || c === 125) depth--;
  }
  return false;
}

/**
 * True when the text holds at most `limit` of "{" and "[" together, those inside strings
 * included: then no container lies deeper than `limit`, and the native search settles it
 * without the character walk that strings need.
 */
function openersAtMost(text: string, limit: number): boolean {
  let n = 0;
  for (let i = text.indexOf('{'); i !== -1; i = text.indexOf('{', i + 1)) if (++n > limit) return false;
  for (let i = text.indexOf('['); i !== -1; i = text.indexOf('[', i + 1)) if (++n > limit) return false;
  return true;
}

/**
 * Counts colons preceded (after optional whitespace) by a quote: at least one per object member
 * in valid JSON text, more only when a string holds an escaped quote before a colon.
 */
function countMemberColons(text: string): number {
  let count = 0;
  let i = text.indexOf(':');
  while (i !== -1) {
    let j = i - 1;
    let c = text.charCodeAt(j);
    while (c === 32 || c === 9 || c === 10 || c === 13) c = text.charCodeAt(--j);
    if (c === 34) count++;
    i = text.indexOf(':', i + 1);
  }
  return count;
}

// Character codes.
const C = {
  Quote: 34,
  Backslash: 92,
  Comma: 44,
  LBrace: 123,
  RBrace: 125,
  LBracket: 91,
  RBracket: 93,
  Minus: 45,
  Plus: 43,
  Dot: 46,
  Zero: 48,
  Nine: 57,
  LowerE: 101,
  UpperE: 69,
  LowerU: 117,
} as const;

/**
 * Scans valid JSON text. With `duplicates` it stops at the first repeated member name (names
 * compared after unescaping); otherwise it stops at the first I-JSON violation.
 */
export function scanJson(text: string, duplicates: boolean): ScanResult {
  const result: ScanResult = {};
  // One frame per open container: for objects the current key's [start, end) and its name set.
  const isObject: boolean[] = [];
  const index: number[] = []; // array index, or key start offset
  const keyEnd: number[] = [];
  const names: (Set<string> | null)[] = [];
  let depth = -1;
  let expectKey = false;
  let nextBackslash = text.indexOf('\\');
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === C.Quote) {
      const start = i + 1;
      if (expectKey) index[depth] = -1; // a bad key is reported at its object
      let end = text.indexOf('"', start);
      let escaped = false;
      if (nextBackslash !== -1 && nextBackslash < end) {
        escaped = true;
        end = scanEscapedString(text, nextBackslash, result.ijson === undefined ? result : null, isObject, index, keyEnd, depth);
        nextBackslash = text.indexOf('\\', end);
        if (!duplicates && result.ijson) return result;
      }
      i = end + 1;
      if (expectKey) {
        expectKey = false;
        index[depth] = start;
        keyEnd[depth] = end;
        if (duplicates) {
          const name = escaped ? (JSON.parse(text.slice(start - 1, end + 1)) as string) : text.slice(start, end);
          let set = names[depth];
          if (!set) names[depth] = set = new Set();
          if (set.has(name)) {
            depth--; // report the object that holds the member
            result.duplicate = { path: pointer(text, isObject, index, keyEnd, depth), member: name };
            return result;
          }
          set.add(name);
        }
      }
      continue;
    }
    if ((c >= C.Zero && c <= C.Nine) || c === C.Minus) {
      const start = i;
      let simple = true;
      i++;
      for (; i < n; i++) {
        const d = text.charCodeAt(i);
        if (d >= C.Zero && d <= C.Nine) continue;
        if (d === C.Dot || d === C.LowerE || d === C.UpperE || d === C.Plus || d === C.Minus) simple = false;
        else break;
      }
      if ((!simple || i - start > 15) && result.ijson === undefined) {
        const v = Number(text.slice(start, i));
        // An integer is a number written without a fraction or exponent part; any other number need only be a double.
        if (simple ? v > MAX_SAFE || v < -MAX_SAFE : !Number.isFinite(v)) {
          const what = Number.isFinite(v)
            ? `${text.slice(start, Math.min(i, start + 40))} is an integer outside ±(2^53−1)`
            : `${text.slice(start, Math.min(i, start + 40))} lies beyond the double range`;
          result.ijson = { path: pointer(text, isObject, index, keyEnd, depth), message: what };
          if (!duplicates) return result;
        }
      }
      continue;
    }
    switch (c) {
      case C.LBrace:
      case C.LBracket:
        depth++;
        isObject[depth] = c === C.LBrace;
        index[depth] = c === C.LBrace ? -1 : 0;
        names[depth] = null;
        expectKey = c === C.LBrace;
        break;
      case C.RBrace:
      case C.RBracket:
        depth--;
        expectKey = false;
        break;
      case C.Comma:
        if (isObject[depth]) expectKey = true;
        else index[depth]!++;
        break;
    }
    i++;
  }
  return result;
}

/**
 * Walks a string from its first backslash to its closing quote, checking \u escapes for lone
 * surrogates; returns the offset of the closing quote.
 */
function scanEscapedString(
  text: string,
  from: number,
  report: ScanResult | null,
  isObject: boolean[],
  index: number[],
  keyEnd: number[],
  depth: number,
): number {
  let i = from;
  for (;;) {
    const c = text.charCodeAt(i);
    if (c === C.Quote) return i;
    if (c !== C.Backslash) {
      i++;
      continue;
    }
    if (text.charCodeAt(i + 1) !== C.LowerU) {
      i += 2;
      continue;
    }
    const unit = parseInt(text.slice(i + 2, i + 6), 16);
    i += 6;
    if (unit < 0xd800 || unit > 0xdfff) continue;
    if (unit <= 0xdbff && text.charCodeAt(i) === C.Backslash && text.charCodeAt(i + 1) === C.LowerU) {
      const low = parseInt(text.slice(i + 2, i + 6), 16);
      if (low >= 0xdc00 && low <= 0xdfff) {
        i += 6;
        continue;
      }
    }
    if (report) {
      report.ijson = {
        path: pointer(text, isObject, index, keyEnd, depth),
        message: `a string holds the lone surrogate \\u${unit.toString(16).padStart(4, '0')}`,
      };
      report = null;
    }
  }
}

/** The JSON Pointer of the current position, built only when something is reported. */
function pointer(text: string, isObject: boolean[], index: number[], keyEnd: number[], depth: number): string {
  let out = '';
  for (let d = 0; d <= depth; d++) {
    if (isObject[d]) {
      if (index[d]! < 0) break;
      const raw = text.slice(index[d]! - 1, keyEnd[d]! + 1);
      out += '/' + escapePointer(JSON.parse(raw) as string);
    } else {
      out += '/' + index[d];
    }
  }
  return out;
}
