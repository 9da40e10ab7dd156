/** The delegation cases of TAP 1.1 against the reference agent in memory (spec: mesh#delegation). */
import { afterAll, describe, expect, it } from 'vitest';
import { ALL_CASES } from '../cases/index.ts';
import { DEFAULT_SEED } from '../options.ts';
import { runCases, sharedLoad } from '../runner.ts';
import { memoryEnv, memoryTarget, stopMemoryAgents } from './memory-target.testkit.ts';

const DELEGATION = ALL_CASES.filter((c) => c.id.startsWith('core.mesh.delegation'));

afterAll(stopMemoryAgents);

describe('delegation paths (spec: mesh#delegation)', () => {
  it('the reference agent passes every delegation case, each of TAP 1.1', { timeout: 60_000 }, async () => {
    expect(DELEGATION.map((c) => c.id).sort()).toEqual([
      'core.mesh.delegation-1-0',
      'core.mesh.delegation-depth',
      'core.mesh.delegation-loop',
    ]);
    expect(DELEGATION.every((c) => c.needs?.version === '1.1')).toBe(true);
    const env = await memoryEnv(memoryTarget(undefined, 10_000), { seed: DEFAULT_SEED, runs: 1, stepTimeoutMs: 5000, debug: false });
    const results = await runCases(DELEGATION, { ...env, load: sharedLoad(env)! }, 3, 1);
    expect(results.map((r) => `${r.verdict} ${r.id}: ${r.detail}`).filter((r) => !r.startsWith('PASS'))).toEqual([]);
  });
});
