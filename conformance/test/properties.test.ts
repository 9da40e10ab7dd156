import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CaseContext, type RunEnv } from '../context.ts';
import { Broken } from '../models/common.ts';
import { runProperty } from '../property-runs.ts';

function ctx(path?: string): CaseContext {
  const env = {
    target: { kind: 'stdio', command: './agent', args: [], display: './agent' },
    probe: {},
    selfId: 'tap-conform',
    stepTimeoutMs: 1000,
    startupMs: 1000,
    timeScale: 1,
    seed: 42,
    runs: 50,
    path,
    replay: (id: string, extra?: string) => `tap-conform --seed 42 ${extra ?? ''} --only ${id} ./agent`.replace(/ +/g, ' '),
    debug: false,
    shared: new Map(),
  } as RunEnv;
  return new CaseContext(env, 'x.property');
}

/** A property that breaks once a list holds a number above 100: it shrinks to [101]. */
const prop = fc.asyncProperty(fc.array(fc.nat(1000)), async (xs) => {
  if (xs.some((x) => x > 100)) throw new Broken(`saw ${Math.max(...xs)}`);
});

describe('property failures (spec: conformance#properties)', () => {
  it('shrink, and report the seed, the path and the replay command', async () => {
    const o = await runProperty(ctx(), 'x.property', prop, 10_000);
    expect(o.verdict).toBe('FAIL');
    expect(o.detail).toMatch(/saw 101 — seed 42, path [\d:]+; replay: tap-conform --seed 42 --path [\d:]+ --only x\.property \.\/agent/);
    expect(o.observed).toContain('[101]');
  });

  it('replay the same failure from its path', async () => {
    const first = await runProperty(ctx(), 'x.property', prop, 10_000);
    const path = /path ([\d:]+);/.exec(first.detail)![1]!;
    const again = await runProperty(ctx(path), 'x.property', prop, 10_000);
    expect(again.verdict).toBe('FAIL');
    expect(again.observed).toBe(first.observed);
  });

  it('turn a non-agent exception into ERROR', async () => {
    const o = await runProperty(
      ctx(),
      'x.property',
      fc.asyncProperty(fc.nat(), async () => {
        throw new TypeError('harness bug');
      }),
      5_000,
    );
    expect(o.verdict).toBe('ERROR');
  });
});
