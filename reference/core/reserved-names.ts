/**
 * Names starting with `tap.` are reserved to the specification; these are the capabilities it
 * defines, the conformance capabilities of its conformance chapter (spec: versioning#reserved-names,
 * conformance#test-capabilities).
 */

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
