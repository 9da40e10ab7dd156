/** The mesh rows' warm-up (bench/scenarios/mesh-throughput.ts): it goes on while the rate climbs, and stops once it settles. */
import { describe, expect, it } from 'vitest';
import { settle } from './scenarios/mesh-throughput.ts';

/** A driver whose windows run at the given rates in turn (the last one ever after), counting the calls asked of it. */
function windows(rates: number[]) {
  const asked: number[] = [];
  const run = async (_call: () => Promise<unknown>, count: number): Promise<{ rate: number }> => {
    asked.push(count);
    return { rate: rates[Math.min(asked.length - 2, rates.length - 1)] ?? 0 };
  };
  return { run, asked };
}
const call = async (): Promise<void> => {};

describe('the mesh warm-up', () => {
  it('goes on past its least count while the rate climbs, and stops two windows after it settled', async () => {
    // Windows of 2 × 200 calls: the rate climbs by more than 5 % four times, then holds within it.
    const w = windows([100, 120, 140, 160, 200, 204, 199, 230]);
    const warmed = await settle(call, 50, 2, 60_000, w.run);
    expect(w.asked).toEqual([50, 400, 400, 400, 400, 400, 400, 400]);
    expect(warmed.tasks).toBe(50 + 7 * 400);
  });

  it('does no window with no time for them, and stops at its time limit while the rate still climbs', async () => {
    const none = windows([1]);
    expect((await settle(call, 50, 2, 0, none.run)).tasks).toBe(50);
    expect(none.asked).toEqual([50]);
    // Ever faster: only the time limit ends it.
    let rate = 1;
    const faster = async (): Promise<{ rate: number }> => {
      await new Promise((r) => setTimeout(r, 5));
      return { rate: (rate *= 2) };
    };
    const warmed = await settle(call, 50, 2, 200, faster);
    expect(warmed.ms).toBeGreaterThanOrEqual(200);
    expect(warmed.tasks).toBeGreaterThan(50 + 400);
  });
});
