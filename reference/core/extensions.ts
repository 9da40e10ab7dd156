/**
 * Negotiated extensions of TAP 1.1: which extensions a session uses, and which a required one
 * leaves missing (spec: handshake#negotiated-extensions).
 */
import type { Extension } from '../../schemas/src/index.ts';
import { compareVersions, parseVersion } from './versions.ts';

export type { Extension } from '../../schemas/src/index.ts';

/** The outcome of a negotiation: the URIs the session uses, and the required URIs the other side lacks. */
export interface ExtensionNegotiation {
  /** The URIs of the requester's offer that the agent supports, in the order offered, each once. */
  accepted: string[];
  /** Required by one side and not supported (or not offered) by the other; the handshake fails when not empty. */
  missing: string[];
}

/** True when a session of `version` negotiates extensions: TAP 1.1 and later minors (spec: versioning#tap-1-1). */
export function negotiatesExtensions(version: string): boolean {
  const v = parseVersion(version);
  return !!v && compareVersions(v, { major: 1, minor: 1 }) >= 0;
}

/**
 * Negotiates the requester's `offered` extensions (its card's) against the agent's `supported`
 * ones: the session uses those both list; a requester's required extension the agent does not
 * support, or an agent's required extension the requester did not offer, is missing
 * (spec: handshake#negotiated-extensions).
 */
export function negotiateExtensions(offered: readonly Extension[] | undefined, supported: readonly Extension[]): ExtensionNegotiation {
  const ours = new Set(supported.map((e) => e.uri));
  const theirs = new Set((offered ?? []).map((e) => e.uri));
  const accepted: string[] = [];
  const missing: string[] = [];
  for (const e of offered ?? []) {
    if (ours.has(e.uri)) {
      if (!accepted.includes(e.uri)) accepted.push(e.uri);
    } else if (e.required === true && !missing.includes(e.uri)) missing.push(e.uri);
  }
  for (const e of supported) if (e.required === true && !theirs.has(e.uri) && !missing.includes(e.uri)) missing.push(e.uri);
  return { accepted, missing };
}
