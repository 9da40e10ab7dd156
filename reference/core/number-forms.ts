/**
 * The written form of a number, which JSON.parse forgets: `5`, `5.0` and `5e0` parse to the same
 * value, but only the first is an integer in the input forms of the conformance capabilities
 * (spec: conformance#input-forms).
 */

const WS = new Set([' ', '\t', '\n', '\r']);

/**
 * The text of the number at `path` (member names from the top-level object) in `text`, a JSON
 * text that has already been parsed; undefined when nothing is there or it is not a number.
 */
export function numberTextAt(text: string, path: readonly string[]): string | undefined {
  let at = skipWs(text, 0);
  for (const name of path) {
    if (text[at] !== '{') return undefined;
    const found = memberValue(text, at, name);
    if (found === undefined) return undefined;
    at = found;
  }
  const end = valueEnd(text, at);
  const token = text.slice(at, end);
  return /^-?\d/.test(token) ? token : undefined;
}

/** True when a number's text has neither a fraction nor an exponent part (spec: conformance#input-forms). */
export function isIntegerText(token: string): boolean {
  return /^-?(0|[1-9]\d*)$/.test(token);
}

/** Where the value of member `name` of the object at `at` starts, if it has one. */
function memberValue(text: string, at: number, name: string): number | undefined {
  let i = skipWs(text, at + 1);
  while (i < text.length && text[i] !== '}') {
    const keyEnd = stringEnd(text, i);
    const key = JSON.parse(text.slice(i, keyEnd)) as string;
    i = skipWs(text, keyEnd);
    i = skipWs(text, i + 1); // the colon
    if (key === name) return i;
    i = skipWs(text, valueEnd(text, i));
    if (text[i] === ',') i = skipWs(text, i + 1);
  }
  return undefined;
}

function skipWs(text: string, i: number): number {
  while (i < text.length && WS.has(text[i]!)) i++;
  return i;
}

/** The index just past the string that opens at `i`. */
function stringEnd(text: string, i: number): number {
  let j = i + 1;
  while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
  return j + 1;
}

/** The index just past the value that starts at `i`. */
function valueEnd(text: string, i: number): number {
  const c = text[i];
  if (c === '"') return stringEnd(text, i);
  if (c !== '{' && c !== '[') {
    let j = i;
    while (j < text.length && !WS.has(text[j]!) && text[j] !== ',' && text[j] !== '}' && text[j] !== ']') j++;
    return j;
  }
  let depth = 0;
  let j = i;
  while (j < text.length) {
    const d = text[j];
    if (d === '"') {
      j = stringEnd(text, j);
      continue;
    }
    if (d === '{' || d === '[') depth++;
    else if (d === '}' || d === ']') {
      depth--;
      if (depth === 0) return j + 1;
    }
    j++;
  }
  return j;
}
