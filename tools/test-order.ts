/**
 * The slow files that take longest, longest first (a run of `npx vitest run` on the project's
 * 2-core machine; bench/results/test-times.md): most wait on leases, timed cases and processes,
 * and one that starts last keeps the run going alone after the rest. Vitest orders files by the
 * last run's durations, which a fresh clone (CI) does not have: by the size of the file, small
 * files that wait for a minute started among the last.
 */
export const LONGEST: readonly string[] = [
  'conformance/test/nats-durable-broken.server.test.ts',
  'test/harness-selftest.process.test.ts',
  'test/workspace-conformance.process.test.ts',
  'conformance/test/nats-durable.server.test.ts',
  'test/gen-types.process.test.ts',
  'bench/bench.process.test.ts',
  'conformance/test/security.server.test.ts',
  'test/site.browser.test.ts',
  'reference/jetstream/cluster.server.test.ts',
  'conformance/test/nats.server.test.ts',
  'conformance/test/processes.process.test.ts',
  'test/cross-validators.process.test.ts',
];
