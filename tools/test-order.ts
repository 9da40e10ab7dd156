/**
 * The fast-tier files that take longest, longest first (a run of `npx vitest run` on the project's
 * 2-core machine; bench/results/test-times.md). In `npm test` the fast tier runs after the slow
 * one, at the end of the run, and vitest starts the larger files first when it has no durations
 * from an earlier run (a fresh clone, as in CI): the in-memory conformance run, a small file of ten
 * seconds, started last and ended the run alone. These start first among the fast files.
 */
export const LONGEST_FAST: readonly string[] = [
  'conformance/test/memory-suite.test.ts',
  'reference/client/robustness.test.ts',
  'reference/agent/transcripts.test.ts',
];
