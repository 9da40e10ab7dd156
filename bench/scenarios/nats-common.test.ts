import { describe, expect, it } from 'vitest';
import type { Baseline, Figure } from '../lib/report.ts';
import { ratioTarget } from './nats-common.ts';

const spread = (median: number) => ({ median, min: median, max: median, runs: [median] });
const tap: Figure = { name: 'TAP', value: spread(700) };
const base = (id: string, median: number, tapMedian = 700): Baseline => ({
  id,
  name: id,
  value: spread(median),
  ratio: tapMedian / median,
});

describe('a NATS target judged against its floor, with the ceiling beside (bench/scenarios/nats-common.ts)', () => {
  const target = { text: 'at least 0.8× the floor', at: 0.8 };

  it('says the target is out of reach when the ceiling itself is under it', () => {
    const t = ratioTarget(target, tap, base('floor', 1000), base('ceiling', 770));
    expect(t.met).toBe(false);
    expect(t.measured).toBe(
      "0.70× the floor (0.70–0.70×); TAP 0.91× its ceiling, which is 0.77× the floor, under the target's 0.8×: out of reach in this run for any implementation that makes the ceiling's messages and operations",
    );
  });

  it('says nothing of reach when the ceiling is at or over the target', () => {
    const t = ratioTarget(target, tap, base('floor', 1000), base('ceiling', 900));
    expect(t.measured).toBe('0.70× the floor (0.70–0.70×); TAP 0.78× its ceiling, which is 0.90× the floor');
    expect(ratioTarget(target, { name: 'TAP', value: spread(850) }, base('floor', 1000, 850), base('ceiling', 900, 850)).met).toBe(true);
  });
});
