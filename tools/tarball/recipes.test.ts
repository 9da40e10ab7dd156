/** The docs' recipes (tools/tarball/recipes.ts): the README and the Getting Started page give each the same way. */
import { describe, expect, it } from 'vitest';
import { allBlocks, failedCases, recipesOf } from './recipes.ts';

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

describe('failedCases', () => {
  it('gives each failed case of a certification with the lines that explain it, and nothing else', () => {
    const output = [
      'FAIL          core  1 PASS, 1 FAIL',
      '  FAIL       core.tasks.accept-echo [MUST] A task.request is answered with task.accepted',
      '      task t-1: sequence 3 follows 1',
      '      expected: every message valid',
      '  PASS       core.handshake.complete [MUST] The handshake completes',
      '      not shown',
      '  ERROR      tasks.property.lifecycle [MUST] Random submits keep every task rule',
      '      the agent closed the connection',
      '',
      '2 cases in 1.2 s: 1 FAIL, 1 ERROR',
    ].join('\n');
    expect(failedCases(output)).toEqual([
      'FAIL       core.tasks.accept-echo [MUST] A task.request is answered with task.accepted',
      '  task t-1: sequence 3 follows 1',
      '  expected: every message valid',
      'ERROR      tasks.property.lifecycle [MUST] Random submits keep every task rule',
      '  the agent closed the connection',
    ]);
    expect(failedCases('301 cases in 20.1 s: 284 PASS')).toEqual([]);
  });
});
