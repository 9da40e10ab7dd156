/**
 * Every case of the suite once against the reference agent in this process, on an in-memory
 * transport pair: the breadth of the suite without processes. Only what a memory pair cannot give
 * is left out — the binding profiles (stdio, WebSocket), the cases that need one binding, and the
 * crash-and-restart cases, which the certify step runs against real processes — and the reference
 * is held to every other case: no FAIL, no ERROR, no UNIMPLEMENTED, no NOT-TESTED
 * (spec: conformance#verdicts).
 * It runs with the default seed (the one certification uses) and one more, so that the random
 * choices of the property and chaos cases are exercised beyond the seed of the certify step.
 * TAP_MEMORY_SEEDS (comma-separated) replaces the seeds. The seeds run side by side, each with
 * its own agent.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { ALL_CASES } from '../cases/index.ts';
import { DEFAULT_SEED } from '../options.ts';
import { runCases } from '../runner.ts';
import { memoryEnv, memoryTarget, stopMemoryAgents } from './memory-target.testkit.ts';

afterAll(stopMemoryAgents);

/** The default seed (the one certification uses) and one more. */
// The fast tier (npm run test:fast) runs the default seed only.
const SEEDS = (process.env.TAP_MEMORY_SEEDS ?? (process.env.TAP_TIER === 'fast' ? `${DEFAULT_SEED}` : `${DEFAULT_SEED},987654321`))
  .split(',')
  .map(Number);
const BINDING_PROFILES = new Set(['stdio', 'websocket']);
const CASES = ALL_CASES.filter((c) => !BINDING_PROFILES.has(c.profile) && !c.needs?.restart && !c.needs?.binding && !c.needs?.registry);

// The seeds run side by side: most of a run is spent waiting out timed rules, not computing.
describe.concurrent.each(SEEDS)('the in-memory reference agent passes every case with seed %i', (seed) => {
  it('runs each case that does not need a process or a socket', { timeout: 300_000 }, async () => {
    expect(CASES.length).toBeGreaterThan(150);
    const env = await memoryEnv(memoryTarget(undefined, 10_000), { seed, runs: 5, stepTimeoutMs: 5000, debug: false });
    const results = await runCases(CASES, env, 16, 1);
    const bad = results.filter((r) => r.verdict !== 'PASS').map((r) => `${r.verdict} ${r.id}: ${r.detail}`);
    expect(bad).toEqual([]);
  });
});
