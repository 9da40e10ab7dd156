/** The mesh rows' warm-up (bench/scenarios/mesh-throughput.ts): it goes on while the rate climbs, and stops once it settles. */
import { describe, expect, it } from 'vitest';
import { settle } from './scenarios/mesh-throughput.ts';

/** A call that spends `costUs(n)` µs of CPU on its n-th run: a process whose JIT warms up as it goes. */
function warming(costUs: (n: number) => number): { call: () => Promise<void>; calls: () => number } {
  let n = 0;
  const call = async (): Promise<void> => {
    const end = performance.now() + costUs(n++) / 1000;
    while (performance.now() < end);
  };
  return { call, calls: () => n };
}

describe('the mesh warm-up', () => {
  it('goes on past its least count while the rate climbs, and stops two windows after it settled', async () => {
    // From 150 µs a call down to 20 µs over the first 2,400 calls, then 20 µs.
    const w = warming((n) => Math.max(20, 150 - n * (130 / 2_400)));
    const warmed = await settle(w.call, 100, 2, 30_000);
    expect(warmed.tasks).toBe(w.calls());
    // Windows of 400 calls: the climb ends in the sixth; two windows more say it settled.
    expect(warmed.tasks).toBeGreaterThanOrEqual(2_400);
    expect(warmed.tasks).toBeLessThanOrEqual(100 + 400 * 10);
  });

  it('does no window with no time for them, and stops at its time limit while the rate still climbs', async () => {
    expect((await settle(warming(() => 5).call, 50, 2, 0)).tasks).toBe(50);
    // A fifth cheaper every window of 400 calls: it never settles.
    const w = warming((n) => 200 * 0.8 ** Math.floor(n / 400));
    const warmed = await settle(w.call, 50, 2, 300);
    expect(warmed.ms).toBeGreaterThanOrEqual(300);
    expect(warmed.ms).toBeLessThan(1_500);
  });
});
