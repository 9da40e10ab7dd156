/**
 * The worked examples of ARCHITECTURE.md are the code as it stands: each block marked
 * `<!-- example: <file> -->` appears, line for line, in that file.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { repoPath } from '../paths.ts';

const text = readFileSync(repoPath('ARCHITECTURE.md'), 'utf8');
const examples = [...text.matchAll(/<!-- example: (\S+) -->\n```ts\n([\s\S]*?)```/g)].map((m) => ({ file: m[1]!, code: m[2]! }));

describe('the worked examples of ARCHITECTURE.md', () => {
  it('show a case and a mutant', () => {
    expect(examples.map((e) => e.file)).toEqual(['conformance/cases/core/errors.correlation.ts', 'conformance/mutation/mutants/errors.ts']);
  });

  for (const { file, code } of examples) {
    it(`quote ${file} as it is`, () => {
      expect(readFileSync(repoPath(file), 'utf8')).toContain(code);
    });
  }
});
