import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LONGEST } from './test-order.ts';

const ROOT = new URL('..', import.meta.url).pathname;

describe('the order the slow files start in (tools/test-order.ts)', () => {
  it('names only files that exist, each once, each of a slow tier', () => {
    for (const file of LONGEST) {
      expect(existsSync(join(ROOT, file)), file).toBe(true);
      expect(file, file).toMatch(/\.(process|server|browser|slow)\.test\.ts$/);
    }
    expect(new Set(LONGEST).size).toBe(LONGEST.length);
  });
});
