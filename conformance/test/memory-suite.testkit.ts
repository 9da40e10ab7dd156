/**
 * Every case of the suite against the reference agent in this process, on an in-memory transport
 * pair: the breadth of the suite without processes. Only what a memory pair cannot give is left
 * out — the binding profiles (stdio, WebSocket), the cases that need one binding, the
 * crash-and-restart cases, which the certify step runs against real processes, and the security
 * profile's, which need certificates or a token issuer (conformance/test/security.server.test.ts) —
 * and the reference is held to every other case: no FAIL, no ERROR, no UNIMPLEMENTED, no
 * NOT-TESTED (spec: conformance#verdicts). Used by memory-suite.test.ts (the default seed, the one
 * certification uses), memory-suite-seeds.slow.test.ts (one more seed, so that the random choices
 * of the property and chaos cases are exercised beyond it) and memory-suite-limits.slow.test.ts
 * (an agent whose card allows 8 tasks at once). The agent and the harness share this process
 * with the other test files vitest runs beside it: their timed rules run at the machine's
 * load-derived --time-scale (time-scale.testkit.ts), so a late timer of a busy run is not a NON-STRICT.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { tasksOf } from '../case.ts';
import { ALL_CASES } from '../cases/index.ts';
import { DEFAULT_SEED } from '../options.ts';
import { runCases, sharedLoad } from '../runner.ts';
import { memoryEnv, memoryTarget, stopMemoryAgents } from './memory-target.testkit.ts';
import { loadTimeScale } from './time-scale.testkit.ts';

const BINDING_PROFILES = new Set(['stdio', 'websocket']);
const CASES = ALL_CASES.filter(
  (c) => !BINDING_PROFILES.has(c.profile) && !c.needs?.restart && !c.needs?.binding && !c.needs?.registry && !c.needs?.security,
);

/**
 * One test per seed, each against its own agent, side by side (most of a run is spent waiting out
 * timed rules, not computing). TAP_MEMORY_SEEDS (comma-separated) replaces the seeds.
 */
export function describeMemorySuite(seeds: readonly number[]): void {
  const chosen = process.env.TAP_MEMORY_SEEDS ? process.env.TAP_MEMORY_SEEDS.split(',').map(Number) : seeds;
  afterAll(stopMemoryAgents);
  describe.concurrent.each(chosen)('the in-memory reference agent passes every case with seed %i', (seed) => {
    it('runs each case that does not need a process or a socket, each within the tasks it declares', { timeout: 300_000 }, async () => {
      expect(CASES.length).toBeGreaterThan(150);
      const env = await memoryEnv(memoryTarget(undefined, 10_000), {
        seed,
        runs: 5,
        stepTimeoutMs: 5000,
        debug: false,
        timeScale: loadTimeScale(3),
      });
      const load = sharedLoad(env)!;
      const results = await runCases(CASES, { ...env, load }, 16, 1);
      const bad = results.filter((r) => r.verdict !== 'PASS').map((r) => `${r.verdict} ${r.id}: ${r.detail}`);
      expect(bad).toEqual([]);
      // The run starts a case when the tasks it declares fit the agent's limits (spec: limits#concurrency):
      // a case that held more at once than it declares could overload the agent.
      const peaks = load.ledger.peakByCase();
      const over = CASES.filter((c) => !c.fillsLimits && (peaks.get(c.id) ?? 0) > tasksOf(c)).map(
        (c) => `${c.id} held ${peaks.get(c.id)} tasks at once, declares ${tasksOf(c)}`,
      );
      expect(over).toEqual([]);
    });
  });
}

/** Agent messages of a result's transcript that answer BUSY. */
const busyReplies = (transcript: readonly { dir: string; text: string }[]) =>
  transcript.filter((e) => e.dir === 'in' && e.text.includes('"type":"error"') && e.text.includes('"code":"BUSY"'));

/** The suite against an agent whose card allows 8 tasks at once: it passes, and is refused BUSY only where a case asks for it. */
export function describeLimitedAgent(): void {
  afterAll(stopMemoryAgents);
  describe('an agent whose card allows 8 tasks at once (spec: limits#concurrency, conformance#verdicts)', () => {
    it('passes every case with 16 jobs, and is never answered BUSY but where a case asks for it', { timeout: 300_000 }, async () => {
      const env = await memoryEnv(memoryTarget(undefined, 10_000, { max_concurrent_tasks: 8, max_tasks_per_principal: 8 }), {
        seed: DEFAULT_SEED,
        runs: 5,
        stepTimeoutMs: 5000,
        debug: false,
        timeScale: loadTimeScale(3),
      });
      expect(env.probe.card?.limits?.max_concurrent_tasks).toBe(8);
      const results = await runCases(CASES, env, 16, 1);
      expect(results.filter((r) => r.verdict !== 'PASS').map((r) => `${r.verdict} ${r.id}: ${r.detail}`)).toEqual([]);
      // The cases that fill a session's own limit on purpose (max_concurrent_tasks 1) are the only ones refused.
      const refused = results.filter((r) => busyReplies(r.transcript).length > 0).map((r) => r.id);
      expect(refused.filter((id) => id !== 'tasks.concurrency.busy')).toEqual([]);
    });
  });
}
