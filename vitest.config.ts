import { defineConfig } from 'vitest/config';

/**
 * The test files that start many processes, servers or compilers, or wait out leases; TAP_TIER=fast
 * (npm run test:fast) leaves them out, for the inner loop. npm test runs everything.
 */
const SLOW = [
  'test/harness-selftest.test.ts',
  'test/soak.test.ts',
  'conformance/test/judge.test.ts',
  'conformance/test/mutation.test.ts',
  'conformance/test/processes.test.ts',
  'conformance/test/launcher.test.ts',
  'conformance/test/slow-transport.test.ts',
  'reference/agent/hostile.test.ts',
  'reference/agent/process.test.ts',
  'reference/workspace/fencing.test.ts',
  'reference/workspace/race.test.ts',
  'test/workspace-conformance.test.ts',
  'test/python-agent.test.ts',
  'test/gen-types.test.ts',
  'test/cross-validators.test.ts',
  'test/site.test.ts',
  'test/site.browser.test.ts',
  'bench/bench.test.ts',
  'reference/agents/demo/demo.test.ts',
  'reference/agents/workspace-demo/demo.test.ts',
  'reference/jetstream/cluster.test.ts',
  'conformance/test/nats.test.ts',
  // Each starts nats-server, most of them agent processes too.
  'conformance/test/nats-durable.test.ts',
  'conformance/test/registry.test.ts',
  'reference/agents/mesh-demo/demo.test.ts',
  'reference/client/nats.test.ts',
  'reference/jetstream/events.test.ts',
  'reference/jetstream/result-recovery.test.ts',
  'reference/jetstream/runner.test.ts',
  'reference/mesh/member.test.ts',
  'reference/mesh/mesh.test.ts',
  'reference/mesh/registry.test.ts',
  'reference/tapctl/mesh/mesh.test.ts',
  'reference/tapctl/mesh/traces.test.ts',
  'reference/tapctl/nats.test.ts',
  'reference/transports/nats/nats-transport.test.ts',
  'reference/transports/nats/nats-server.test.ts',
  'test/mesh-faults.test.ts',
  'reference/agents/reference-agent-trace.test.ts',
  'reference/serve/run.test.ts',
  'tools/action.test.ts',
];

export default defineConfig({
  test: {
    include: ['**/*.test.ts'],
    exclude: ['node_modules/**', 'site/**', 'dist/**', ...(process.env.TAP_TIER === 'fast' ? SLOW : [])],
    // Tests that start the bins need a current dist/: built here once when a source is newer.
    globalSetup: ['tools/vitest-build.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // One module graph per worker, not per file: the files share the modules they import (most of
    // reference/ and conformance/), which halves the CPU a run spends loading them. A file that
    // changes a module's state undoes it in its own afterAll.
    isolate: false,
    // Both cores: most files wait on processes and sockets rather than compute.
    maxWorkers: 2,
  },
});
