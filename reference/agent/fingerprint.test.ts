/** The fingerprint a kept task and its idempotency record keep (spec: idempotency#fingerprint, limits#table-limits). */
import { describe, expect, it } from 'vitest';
import { canonicalize } from '../core/jcs.ts';
import { compactFingerprint, fingerprint, FINGERPRINT_TEXT_MAX } from './fingerprint.ts';

describe('fingerprint', () => {
  it('is the RFC 8785 text of a small request, whatever the order of its members', () => {
    expect(fingerprint('tap.test.echo', { b: 1, a: 'x' })).toBe('["tap.test.echo",{"a":"x","b":1}]');
    expect(fingerprint('tap.test.echo', { a: 'x', b: 1 })).toBe(fingerprint('tap.test.echo', { b: 1, a: 'x' }));
    expect(fingerprint('tap.test.echo', undefined)).toBe('["tap.test.echo",null]');
  });

  it('keeps a large request as a digest of the same few bytes, equal exactly when the requests are equal', () => {
    const big = { text: 'x'.repeat(1_000_000), n: 1 };
    const fp = fingerprint('tap.test.echo', big);
    expect(fp).toMatch(/^sha256:[A-Za-z0-9_-]{43}$/);
    expect(fingerprint('tap.test.echo', { n: 1, text: 'x'.repeat(1_000_000) })).toBe(fp);
    expect(fingerprint('tap.test.echo', { ...big, n: 2 })).not.toBe(fp);
    expect(fingerprint('other.capability', big)).not.toBe(fp);
  });

  it('compacts the whole text a journal kept to what a request now gives, and leaves a compacted one as it is', () => {
    const input = { text: 'y'.repeat(FINGERPRINT_TEXT_MAX) };
    const whole = canonicalize(['tap.test.echo', input]);
    expect(whole.length).toBeGreaterThan(FINGERPRINT_TEXT_MAX);
    expect(compactFingerprint(whole)).toBe(fingerprint('tap.test.echo', input));
    expect(compactFingerprint(compactFingerprint(whole))).toBe(compactFingerprint(whole));
    const small = canonicalize(['tap.test.echo', { text: 'y' }]);
    expect(compactFingerprint(small)).toBe(small);
  });
});
