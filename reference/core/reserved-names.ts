/**
 * Names starting with `tap.` are reserved to the specification; these are the capabilities it
 * defines, the conformance capabilities of its conformance chapter (spec: versioning#reserved-names,
 * conformance#test-capabilities).
 */
import { compareVersions, parseVersion } from './versions.ts';

/** Every capability name the specification defines (spec: conformance#test-capabilities). */
export const SPEC_CAPABILITY_NAMES: ReadonlySet<string> = new Set([
  'tap.test.echo',
  'tap.test.stream',
  'tap.test.sleep',
  'tap.test.fail',
  'tap.test.plan',
  'tap.test.counter',
  'tap.test.guarded',
  // TAP 1.1 (spec: conformance#test-capabilities-1-1).
  'tap.test.ask',
]);

/** True when a peer may declare a capability of this name: not reserved, or defined by the specification (spec: versioning#reserved-names). */
export function mayDeclareCapability(name: string): boolean {
  return !name.startsWith('tap.') || SPEC_CAPABILITY_NAMES.has(name);
}

/** The spec-defined capabilities a version later than 1.0 added, with that version (spec: conformance#test-capabilities-1-1). */
const CAPABILITY_SINCE: ReadonlyMap<string, string> = new Map([['tap.test.ask', '1.1']]);

/**
 * The card as a session of `version` shows it: without the reserved names a later version
 * defines, which the session's version still reserves (spec: versioning#reserved-names,
 * conformance#test-capabilities-1-1).
 */
export function cardForVersion<C extends { capabilities: ReadonlyArray<{ name: string }> }>(card: C, version: string): C {
  const later = card.capabilities.filter((c) => {
    const since = CAPABILITY_SINCE.get(c.name);
    const [added, spoken] = [parseVersion(since ?? ''), parseVersion(version)];
    return !!added && !!spoken && compareVersions(added, spoken) > 0;
  });
  return later.length === 0 ? card : { ...card, capabilities: card.capabilities.filter((c) => !later.includes(c)) };
}
