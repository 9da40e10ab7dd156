import { describe, expect, it } from 'vitest';
import { randomHex, tmpName, TMP_PREFIX } from './fsio.ts';

describe('fsio names', () => {
  it('randomHex gives hex of the asked length, never the same twice across many refills of its pool', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      const n = 1 + (i % 9);
      const hex = randomHex(n);
      expect(hex).toMatch(new RegExp(`^[0-9a-f]{${2 * n}}$`));
      if (n >= 6) {
        expect(seen.has(hex)).toBe(false);
        seen.add(hex);
      }
    }
    expect(randomHex(300)).toMatch(/^[0-9a-f]{600}$/);
  });

  it('tmpName gives temporary names, each new', () => {
    const names = Array.from({ length: 1000 }, () => tmpName());
    expect(new Set(names).size).toBe(1000);
    for (const n of names) expect(n.startsWith(TMP_PREFIX)).toBe(true);
  });
});
