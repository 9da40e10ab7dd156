import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LONGEST_FAST } from './test-order.ts';

const ROOT = new URL('..', import.meta.url).pathname;

describe('the fast files that start first in npm test (tools/test-order.ts)', () => {
  it('names only files that exist, each once, each of the fast tier', () => {
    for (const file of LONGEST_FAST) {
      expect(existsSync(join(ROOT, file)), file).toBe(true);
      expect(file, file).not.toMatch(/\.(process|server|browser|slow)\.test\.ts$/);
    }
    expect(new Set(LONGEST_FAST).size).toBe(LONGEST_FAST.length);
  });
});
