/** The bins of a clone that has not been built yet say so instead of failing on a missing module. */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const unbuilt = mkdtempSync(join(tmpdir(), 'tap-unbuilt-'));
cpSync(join(ROOT, 'bin'), join(unbuilt, 'bin'), { recursive: true });
afterAll(() => rmSync(unbuilt, { recursive: true, force: true }));

describe('the bins without dist/', () => {
  for (const bin of ['tap-conform', 'tapctl', 'tap-reference-agent', 'tap-bridge']) {
    it(`${bin} exits 2 with one line naming the build`, () => {
      const run = spawnSync(process.execPath, [join(unbuilt, 'bin', `${bin}.mjs`), '--version'], { encoding: 'utf8' });
      expect(run.status).toBe(2);
      expect(run.stderr).toBe(`${bin}: dist/ is not built here: run \`npm run build\` first\n`);
    });
  }
});
