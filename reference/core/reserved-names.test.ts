import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONFORMANCE_CAPABILITIES } from '../agent/conformance-capabilities.ts';
import { mayDeclareCapability, SPEC_CAPABILITY_NAMES } from './reserved-names.ts';

const conformanceChapter = readFileSync(new URL('../../spec/1.1/conformance.md', import.meta.url), 'utf8');

describe('reserved capability names (spec: versioning#reserved-names)', () => {
  it('lists exactly the capabilities the conformance chapter of 1.1 tables define (those of 1.0 with tap.test.ask)', () => {
    const inTable = new Set([...conformanceChapter.matchAll(/^\| `(tap\.[a-z.]+)` \|/gm)].map((m) => m[1]));
    expect([...SPEC_CAPABILITY_NAMES].sort()).toEqual([...inTable].sort());
  });

  it('lists exactly the conformance capabilities the runtime offers', () => {
    expect([...SPEC_CAPABILITY_NAMES].sort()).toEqual(Object.keys(CONFORMANCE_CAPABILITIES).sort());
  });

  it('lets a peer declare its own names and the spec-defined tap. ones, and no other tap. name', () => {
    expect(mayDeclareCapability('acme.summarize')).toBe(true);
    expect(mayDeclareCapability('tap.test.echo')).toBe(true);
    expect(mayDeclareCapability('tap.test.mine')).toBe(false);
    expect(mayDeclareCapability('tap.admin.shutdown')).toBe(false);
  });
});
