/**
 * Protocol versions: "MAJOR.MINOR" strings, the "tap/MAJOR.MINOR" envelope form, and the
 * choice of the highest common version (spec: handshake#version-negotiation).
 */

const VERSION = /^(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})$/;
const PROTOCOL = /^tap\/((?:0|[1-9][0-9]{0,3})\.(?:0|[1-9][0-9]{0,3}))$/;

/** A parsed version. */
export interface Version {
  major: number;
  minor: number;
}

// Every message of a session asks about the same protocol and version: the last answer of each is kept.
let lastParsed: { text: string; version: Readonly<Version> | null } = { text: '', version: null };
let lastProtocol: { protocol: string; version: string | null } = { protocol: '', version: null };

/** Parses "MAJOR.MINOR", or returns null (spec: handshake#version-negotiation). */
export function parseVersion(text: string): Readonly<Version> | null {
  if (text !== lastParsed.text) {
    const m = VERSION.exec(text);
    lastParsed = { text, version: m ? Object.freeze({ major: Number(m[1]), minor: Number(m[2]) }) : null };
  }
  return lastParsed.version;
}

/** The version an envelope's `protocol` names ("tap/1.0" → "1.0"), or null (spec: envelope#protocol). */
export function protocolVersion(protocol: string): string | null {
  if (protocol !== lastProtocol.protocol) lastProtocol = { protocol, version: PROTOCOL.exec(protocol)?.[1] ?? null };
  return lastProtocol.version;
}

/** The envelope `protocol` of a version ("1.0" → "tap/1.0") (spec: envelope#protocol). */
export function protocolOf(version: string): string {
  return `tap/${version}`;
}

/** Numeric order of versions: negative when a < b (so "1.10" follows "1.9"). */
export function compareVersions(a: Version, b: Version): number {
  return a.major - b.major || a.minor - b.minor;
}

/**
 * The highest version both sides list, or null when they share none; malformed entries are
 * ignored. Versions are compared numerically (spec: handshake#version-negotiation).
 */
export function chooseVersion(requested: readonly string[], supported: readonly string[]): string | null {
  const ours = new Set(supported.filter((v) => parseVersion(v)));
  let best: string | null = null;
  let bestParsed: Version | null = null;
  for (const v of requested) {
    const p = parseVersion(v);
    if (!p || !ours.has(v)) continue;
    if (!bestParsed || compareVersions(p, bestParsed) > 0) {
      best = v;
      bestParsed = p;
    }
  }
  return best;
}

/**
 * The lowest well-formed version of a list, or null: the version a requester writes before the
 * ack, which every agent of that major reads (spec: versioning#tap-1-1).
 */
export function lowestVersion(versions: readonly string[]): string | null {
  let low: string | null = null;
  for (const v of versions) {
    const p = parseVersion(v);
    if (p && (low === null || compareVersions(p, parseVersion(low)!) < 0)) low = v;
  }
  return low;
}

/**
 * True when a message's `protocol` may be processed in a session of `negotiated`: the same major;
 * a later minor only adds optional members and types (spec: versioning#version-check).
 */
export function isCompatibleProtocol(protocol: string, negotiated: string): boolean {
  const v = protocolVersion(protocol);
  const p = v ? parseVersion(v) : null;
  const n = parseVersion(negotiated);
  return !!p && !!n && p.major === n.major;
}
