import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { newestInput } from './build.ts';

const dir = mkdtempSync(join(tmpdir(), 'tap-build-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes a file dated `seconds` after the epoch. */
function file(path: string, seconds: number): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, '');
  utimesSync(path, seconds, seconds);
}

describe('the build is current until a compiled input changes (tools/build.ts)', () => {
  it('leaves test files and test folders, which dist/ does not hold, out of the newest input', () => {
    file(join(dir, 'src', 'agent.ts'), 1000);
    file(join(dir, 'src', 'agent.test.ts'), 5000);
    file(join(dir, 'src', 'test', 'helper.ts'), 6000);
    for (const d of [join(dir, 'src', 'test'), join(dir, 'src'), dir]) utimesSync(d, 500, 500);
    expect(newestInput(dir)).toBe(1000 * 1000);
    file(join(dir, 'src', 'agent.ts'), 7000);
    expect(newestInput(dir)).toBe(7000 * 1000);
  });
});
