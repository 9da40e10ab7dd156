/** The docs' recipes (tools/tarball/recipes.ts): the README and the Getting Started page give each the same way. */
import { describe, expect, it } from 'vitest';
import { allBlocks, recipesOf } from './recipes.ts';

describe("the docs' recipes", () => {
  const blocks = allBlocks();

  it('are given identically wherever two pages give them (recipesOf throws on a difference)', () => {
    expect(() => recipesOf(blocks)).not.toThrow();
    const requester = blocks.filter((b) => b.test?.file === 'requester.mjs');
    expect(requester.map((b) => b.doc).sort()).toEqual(['README.md', 'tools/site/content/getting-started.md']);
    expect(requester[0]!.code).toBe(requester[1]!.code);
  });

  it("turn a file URL into a path with fileURLToPath, never with a URL's pathname (which keeps %20 and breaks on Windows)", () => {
    const scripts = blocks.filter((b) => b.lang === 'js' && b.code.includes('import.meta.url'));
    expect(scripts.length).toBeGreaterThan(0);
    for (const b of scripts) {
      expect(b.code, `${b.doc}:${b.line}`).not.toMatch(/import\.meta\.url\)\.pathname/);
      expect(b.code, `${b.doc}:${b.line}`).toMatch(/import \{ fileURLToPath \} from 'node:url';[\s\S]*fileURLToPath\(new URL\(/);
    }
  });
});
