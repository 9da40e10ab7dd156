/**
 * Every case of the suite against the reference agent in this process, on an in-memory transport
 * pair: the breadth of the suite without processes. Only what a memory pair cannot give is left
 * out — the binding profiles (stdio, WebSocket), the cases that need one binding, and the
 * crash-and-restart cases, which the certify step runs against real processes — and the reference
 * is held to every other case: no FAIL, no ERROR, no UNIMPLEMENTED, no NOT-TESTED
 * (spec: conformance#verdicts). Used by memory-suite.test.ts (the default seed, the one
 * certification uses) and memory-suite-seeds.slow.test.ts (one more seed, so that the random
 * choices of the property and chaos cases are exercised beyond it).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { ALL_CASES } from '../cases/index.ts';
import { runCases } from '../runner.ts';
import { memoryEnv, memoryTarget, stopMemoryAgents } from './memory-target.testkit.ts';

const BINDING_PROFILES = new Set(['stdio', 'websocket']);
const CASES = ALL_CASES.filter((c) => !BINDING_PROFILES.has(c.profile) && !c.needs?.restart && !c.needs?.binding && !c.needs?.registry);

/**
 * One test per seed, each against its own agent, side by side (most of a run is spent waiting out
 * timed rules, not computing). TAP_MEMORY_SEEDS (comma-separated) replaces the seeds.
 */
export function describeMemorySuite(seeds: readonly number[]): void {
  const chosen = process.env.TAP_MEMORY_SEEDS ? process.env.TAP_MEMORY_SEEDS.split(',').map(Number) : seeds;
  afterAll(stopMemoryAgents);
  describe.concurrent.each(chosen)('the in-memory reference agent passes every case with seed %i', (seed) => {
    it('runs each case that does not need a process or a socket', { timeout: 300_000 }, async () => {
      expect(CASES.length).toBeGreaterThan(150);
      const env = await memoryEnv(memoryTarget(undefined, 10_000), { seed, runs: 5, stepTimeoutMs: 5000, debug: false });
      const results = await runCases(CASES, env, 16, 1);
      const bad = results.filter((r) => r.verdict !== 'PASS').map((r) => `${r.verdict} ${r.id}: ${r.detail}`);
      expect(bad).toEqual([]);
    });
  });
}
