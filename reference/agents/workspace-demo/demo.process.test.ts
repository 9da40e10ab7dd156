/** The workspace demo: three agent processes hand one task along requirements → codegen → review. */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { HERE } from '../../workspace/workspace.testkit.ts';

const DEMO = join(HERE, '../agents/workspace-demo/demo.ts');

describe('the workspace demo', () => {
  it('runs three agent processes over one workspace and ends with tapctl workspace show of the finished task', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', DEMO], { timeout: 90_000 });
    expect(stdout).toMatch(/analyst is watching .* for phase requirements/);
    expect(stdout).toMatch(/coder is watching .* for phase codegen/);
    expect(stdout).toMatch(/reviewer is watching .* for phase review/);
    expect(stdout).toContain('$ tapctl workspace show');
    expect(stdout).toContain('Task demo-slugify: completed');
    expect(stdout).toMatch(/1\. requirements, by analyst at /);
    expect(stdout).toMatch(/2\. codegen, by coder at [^\n]*\n +input +the output of 1/);
    expect(stdout).toMatch(
      /3\. review, by reviewer at [^\n]*\n +input +the output of 2\n +output +\{"verdict":"approved","checks":3,"passed":3,"uncovered":\[\]\}/,
    );
    expect(stdout).toMatch(/artifacts +artifacts\/demo-slugify\/2\/slugify\.js/);
  }, 100_000);
});
