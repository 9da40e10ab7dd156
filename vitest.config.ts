import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { LONGEST_FAST } from './tools/test-order.ts';

/**
 * The test tiers, by file name (ARCHITECTURE.md, "Test tiers"). A test file that starts agent or
 * bin processes, compilers or other programs is `*.process.test.ts`; one that needs nats-server is
 * `*.server.test.ts`; one that drives Chromium is `*.browser.test.ts`; one that runs in this process
 * but for a long time (the mutation sample, the slow transport) is `*.slow.test.ts`. Every other
 * `*.test.ts` is fast: in this process, no system package, no real-time wait of seconds.
 * `npx vitest run` runs both tiers (npm test); with TAP_TEST_TIER=fast in the environment, only the
 * fast one (npm run test:fast).
 *
 * One project holds both tiers: with a project per tier, vitest started three new workers for the
 * fast files once the slow ones ended, and each loaded the module graph again.
 */
export const SLOW_TIERS = ['**/*.process.test.ts', '**/*.server.test.ts', '**/*.browser.test.ts', '**/*.slow.test.ts'];

const EXCLUDE = ['node_modules/**', 'site/**', 'dist/**'];
/** The file-name endings of the slow tiers, e.g. `.process.test.ts`. */
const SLOW_ENDINGS = SLOW_TIERS.map((glob) => glob.replace('**/*', ''));
const FAST_ONLY = process.env.TAP_TEST_TIER === 'fast';

/** Whether a test file belongs to a slow tier. */
export const isSlow = (file: string): boolean => SLOW_ENDINGS.some((ending) => file.endsWith(ending));

/**
 * The order files start in, when both tiers run (npm test): the slow tier's first, longest first
 * as vitest judges it (the last run's durations, or the larger file when there is none), then the
 * fast tier's short files, which fill the workers as the long ones end, its LONGEST_FAST first.
 * Vitest's own order ran the fast tier first, so the longest files of the run started last and
 * ran on alone.
 */
class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const slow = (f: TestSpecification) => isSlow(f.moduleId);
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
    // More workers than cores: most slow files wait on processes, sockets and leases rather than
    // compute, and the harness's timed cases scale their waits to the machine's load (on two cores:
    // vitest alone 296 s with three workers, the files' durations summing to 849 s, and npm test
    // 304 s with four against 338 s with three; the fast tier 43–48 s with four, 47–50 s with three).
    maxWorkers: 4,
    sequence: { sequencer: SlowFirst },
    include: ['**/*.test.ts'],
    exclude: FAST_ONLY ? [...EXCLUDE, ...SLOW_TIERS] : EXCLUDE,
  },
});
