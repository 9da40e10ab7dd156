/**
 * Capability versions and version ranges: SemVer 2.0.0 precedence and the restricted npm range
 * notation the registry chapter defines (spec: registry#version-ranges). No dependency.
 */

/** A parsed SemVer 2.0.0 version. */
export interface SemVer {
  major: number;
  minor: number;
  patch: number;
  /** Pre-release identifiers, empty for a release. */
  pre: Array<string | number>;
}

const NUMERIC = /^(0|[1-9][0-9]*)$/;
const IDENT = /^[0-9A-Za-z-]+$/;
const VERSION = /^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-([0-9A-Za-z.-]+))?(?:\+([0-9A-Za-z.-]+))?$/;

/** Parses a SemVer 2.0.0 version (build metadata ignored), or undefined when it is none. */
export function parseVersion(text: string): SemVer | undefined {
  const m = VERSION.exec(text);
  if (!m) return undefined;
  const pre: Array<string | number> = [];
  if (m[4] !== undefined) {
    for (const part of m[4].split('.')) {
      if (!IDENT.test(part)) return undefined;
      if (/^[0-9]+$/.test(part)) {
        if (!NUMERIC.test(part)) return undefined;
        pre.push(Number(part));
      } else pre.push(part);
    }
  }
  if (m[5]?.split('.').some((p) => !IDENT.test(p))) return undefined;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]), pre };
}

/** SemVer 2.0.0 precedence: negative when a < b, 0 when equal, positive when a > b. */
export function compareVersions(a: SemVer, b: SemVer): number {
  for (const k of ['major', 'minor', 'patch'] as const) if (a[k] !== b[k]) return a[k] - b[k];
  if (a.pre.length === 0 || b.pre.length === 0) return b.pre.length - a.pre.length;
  for (let i = 0; i < Math.min(a.pre.length, b.pre.length); i++) {
    const x = a.pre[i]!;
    const y = b.pre[i]!;
    if (x === y) continue;
    if (typeof x === 'number' && typeof y === 'number') return x - y;
    if (typeof x === 'number') return -1;
    if (typeof y === 'number') return 1;
    return x < y ? -1 : 1;
  }
  return a.pre.length - b.pre.length;
}

type Op = '<' | '<=' | '>' | '>=' | '=';
interface Comparator {
  op: Op;
  version: SemVer;
}

/** A parsed range: alternatives (`||`), each a set of comparators that must all hold. */
export interface VersionRange {
  readonly source: string;
  readonly sets: readonly (readonly Comparator[])[];
}

const PARTIAL =
  /^v?(0|[1-9][0-9]*|[xX*])(?:\.(0|[1-9][0-9]*|[xX*]))?(?:\.(0|[1-9][0-9]*|[xX*]))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/;

interface Partial {
  parts: Array<number | undefined>;
  pre: Array<string | number>;
}

function partial(text: string, range: string): Partial {
  const m = PARTIAL.exec(text);
  if (!m) throw new RangeError(`version range "${range}": cannot read "${text}" as a version`);
  const parts = [m[1], m[2], m[3]].map((p) => (p === undefined || /^[xX*]$/.test(p) ? undefined : Number(p)));
  // A wildcard part ends the version: "1.x.3" is not a version.
  const first = parts.indexOf(undefined);
  if (first !== -1 && parts.slice(first).some((p) => p !== undefined))
    throw new RangeError(`version range "${range}": "${text}" has a number after a wildcard`);
  const pre = m[4] === undefined ? [] : (parseVersion(`0.0.0-${m[4]}`)?.pre ?? []);
  if (m[4] !== undefined && pre.length === 0) throw new RangeError(`version range "${range}": bad pre-release in "${text}"`);
  if (m[4] !== undefined && first !== -1) throw new RangeError(`version range "${range}": "${text}" has a pre-release after a wildcard`);
  return { parts, pre };
}

const v = (major: number, minor: number, patch: number, pre: Array<string | number> = []): SemVer => ({ major, minor, patch, pre });

/** The lowest version a partial names (missing parts 0). */
function low(p: Partial): SemVer {
  return v(p.parts[0] ?? 0, p.parts[1] ?? 0, p.parts[2] ?? 0, p.pre);
}

/** The version just above every version a partial names, or undefined when it names every version. */
function above(p: Partial): SemVer | undefined {
  const [major, minor] = p.parts;
  if (major === undefined) return undefined;
  if (minor === undefined) return v(major + 1, 0, 0, [0]);
  return v(major, minor + 1, 0, [0]);
}

function complete(p: Partial): boolean {
  return p.parts.every((x) => x !== undefined);
}

/** The comparators of one term: a comparator, a partial, a caret, a tilde. */
function term(text: string, range: string): Comparator[] {
  const m = /^(<=|>=|<|>|=|\^|~>?)?\s*(.+)$/.exec(text);
  if (!m) throw new RangeError(`version range "${range}": cannot read "${text}"`);
  const op = m[1] ?? '';
  const p = partial(m[2]!, range);
  const lo = low(p);
  const hi = above(p);
  const [major, minor, patch] = p.parts;
  switch (op) {
    case '':
    case '=':
      if (complete(p)) return [{ op: '=', version: lo }];
      return hi
        ? [
            { op: '>=', version: lo },
            { op: '<', version: hi },
          ]
        : [];
    case '>':
      if (complete(p)) return [{ op: '>', version: lo }];
      return hi ? [{ op: '>=', version: hi }] : [{ op: '<', version: v(0, 0, 0, [0]) }];
    case '>=':
      return [{ op: '>=', version: lo }];
    case '<':
      return [{ op: '<', version: lo }];
    case '<=':
      if (complete(p)) return [{ op: '<=', version: lo }];
      return hi ? [{ op: '<', version: hi }] : [];
    case '^': {
      if (major === undefined) return [];
      let top: SemVer;
      if (major > 0 || minor === undefined) top = v(major + 1, 0, 0, [0]);
      else if (minor > 0 || patch === undefined) top = v(0, minor + 1, 0, [0]);
      else top = v(0, 0, patch + 1, [0]);
      return [
        { op: '>=', version: lo },
        { op: '<', version: top },
      ];
    }
    default: {
      // "~" and "~>": up to the next minor version, or the next major one when no minor is given.
      if (major === undefined) return [];
      const top = minor === undefined ? v(major + 1, 0, 0, [0]) : v(major, minor + 1, 0, [0]);
      return [
        { op: '>=', version: lo },
        { op: '<', version: top },
      ];
    }
  }
}

/**
 * Parses a version range (spec: registry#version-ranges); throws a RangeError naming the part it
 * could not read (spec: registry#version-ranges, TAP-REG-036).
 */
export function parseRange(source: string): VersionRange {
  const sets = source.split('||').map((alternative) => {
    const text = alternative.trim();
    const hyphen = /^(\S+)\s+-\s+(\S+)$/.exec(text);
    if (hyphen) {
      const from = partial(hyphen[1]!, source);
      const to = partial(hyphen[2]!, source);
      const upper = complete(to) ? [{ op: '<=' as const, version: low(to) }] : above(to) ? [{ op: '<' as const, version: above(to)! }] : [];
      return [{ op: '>=' as const, version: low(from) }, ...upper];
    }
    // "> 1.2" and ">1.2" are the same comparator.
    const tokens = text === '' ? [] : text.replace(/(<=|>=|<|>|=|\^|~>?)\s+/g, '$1').split(/\s+/);
    return tokens.flatMap((t) => term(t, source));
  });
  return { source, sets };
}

function holds(c: Comparator, version: SemVer): boolean {
  const d = compareVersions(version, c.version);
  switch (c.op) {
    case '<':
      return d < 0;
    case '<=':
      return d <= 0;
    case '>':
      return d > 0;
    case '>=':
      return d >= 0;
    default:
      return d === 0;
  }
}

/**
 * Whether a capability version satisfies a range: by SemVer precedence for a SemVer version
 * (spec: registry#version-ranges, TAP-REG-034); any other version satisfies only the ranges that
 * mean any version (TAP-REG-035).
 */
export function satisfies(version: string, range: VersionRange | string): boolean {
  const r = typeof range === 'string' ? parseRange(range) : range;
  const parsed = parseVersion(version);
  // A set with no comparators is "any version", the only range a version outside SemVer satisfies.
  if (!parsed) return r.sets.some((set) => set.length === 0);
  return r.sets.some((set) => set.every((c) => holds(c, parsed)));
}
