import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { LONGEST_FAST } from './tools/test-order.ts';

/**
 * The test tiers, by file name (ARCHITECTURE.md, "Test tiers"). A test file that starts agent or
 * bin processes, compilers or other programs is `*.process.test.ts`; one that needs nats-server is
 * `*.server.test.ts`; one that drives Chromium is `*.browser.test.ts`; one that runs in this process
 * but for a long time (the mutation sample, the slow transport) is `*.slow.test.ts`. Every other
 * `*.test.ts` is fast: in this process, no system package, no real-time wait of seconds.
 * `npx vitest run` runs both projects (npm test); `npx vitest run --project fast` the fast one
 * (npm run test:fast).
 */
export const SLOW_TIERS = ['**/*.process.test.ts', '**/*.server.test.ts', '**/*.browser.test.ts', '**/*.slow.test.ts'];

const EXCLUDE = ['node_modules/**', 'site/**', 'dist/**'];

/**
 * The order files start in, when both projects run (npm test): the slow project's first, longest
 * first as vitest judges it (the last run's durations, or the larger file when there is none), then
 * the fast project's short files, which fill the workers as the long ones end, its LONGEST_FAST
 * first. Vitest's own order runs the fast project first, so the longest files of the run started
 * last and ran on alone.
 */
class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const slow = (f: TestSpecification) => f.project.name === 'slow';
    const rank = (f: TestSpecification) => {
      const i = LONGEST_FAST.findIndex((name) => f.moduleId.endsWith(`/${name}`));
      return i === -1 ? LONGEST_FAST.length : i;
    };
    // Array.prototype.sort is stable: the files LONGEST_FAST does not name keep vitest's order.
    return [...sorted.filter(slow), ...sorted.filter((f) => !slow(f)).sort((a, b) => rank(a) - rank(b))];
  }
}

export default defineConfig({
  test: {
    // Tests that start the bins need a current dist/: built here once when a source is newer.
    globalSetup: ['tools/vitest-build.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // One module graph per worker, not per file: the files share the modules they import (most of
    // reference/ and conformance/), which halves the CPU a run spends loading them. A file that
    // changes a module's state undoes it in its own afterAll.
    isolate: false,
    // Three workers on two cores: most slow files wait on processes, sockets and leases rather than
    // compute (a full run keeps the cores about two-thirds busy with two), and the harness's timed
    // cases scale their waits to the machine's load.
    maxWorkers: 3,
    sequence: { sequencer: SlowFirst },
    projects: [
      { extends: true, test: { name: 'fast', include: ['**/*.test.ts'], exclude: [...EXCLUDE, ...SLOW_TIERS] } },
      { extends: true, test: { name: 'slow', include: SLOW_TIERS, exclude: EXCLUDE } },
    ],
  },
});
