import { defineConfig } from 'vitest/config';

/**
 * The test files that start many processes, servers or compilers, or wait out leases; TAP_TIER=fast
 * (npm run test:fast) leaves them out, for the inner loop. npm test runs everything.
 */
const SLOW = [
  'test/harness-selftest.process.test.ts',
  'test/soak.process.test.ts',
  'conformance/test/judge.process.test.ts',
  'conformance/test/mutation.slow.test.ts',
  'conformance/test/processes.process.test.ts',
  'conformance/test/launcher.process.test.ts',
  'conformance/test/slow-transport.slow.test.ts',
  'reference/agent/hostile.process.test.ts',
  'reference/agent/bins.process.test.ts',
  'reference/workspace/fencing.process.test.ts',
  'reference/workspace/race.process.test.ts',
  'test/workspace-conformance.process.test.ts',
  'test/python-agent.process.test.ts',
  'test/gen-types.process.test.ts',
  'test/cross-validators.process.test.ts',
  'test/site.process.test.ts',
  'test/site.browser.test.ts',
  'bench/bench.process.test.ts',
  'reference/agents/demo/demo.process.test.ts',
  'reference/agents/workspace-demo/demo.process.test.ts',
  'reference/jetstream/cluster.server.test.ts',
  'conformance/test/nats.server.test.ts',
  // Each starts nats-server, most of them agent processes too.
  'conformance/test/nats-durable.server.test.ts',
  'conformance/test/registry.server.test.ts',
  'reference/agents/mesh-demo/demo.server.test.ts',
  'reference/client/nats.server.test.ts',
  'reference/jetstream/events.server.test.ts',
  'reference/jetstream/result-recovery.server.test.ts',
  'reference/jetstream/runner.server.test.ts',
  'reference/mesh/member.server.test.ts',
  'reference/mesh/mesh.server.test.ts',
  'reference/mesh/registry.server.test.ts',
  'reference/tapctl/mesh/mesh.server.test.ts',
  'reference/tapctl/mesh/traces.server.test.ts',
  'reference/tapctl/nats.server.test.ts',
  'reference/transports/nats/nats-transport.server.test.ts',
  'reference/transports/nats/nats-server.server.test.ts',
  'test/mesh-faults.server.test.ts',
  'reference/agents/reference-agent-trace.server.test.ts',
  'reference/serve/run.process.test.ts',
  'tools/action.process.test.ts',
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
