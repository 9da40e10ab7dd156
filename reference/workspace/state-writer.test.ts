import { describe, expect, it, vi } from 'vitest';
import { StateWriter } from './state-writer.ts';

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A write that records the state it wrote, and may be made to wait. */
function recorder() {
  let state = 0;
  const written: number[] = [];
  let inFlight = 0;
  let most = 0;
  return {
    set: (n: number) => (state = n),
    written,
    most: () => most,
    write: async () => {
      inFlight++;
      most = Math.max(most, inFlight);
      const s = state;
      await tick(5);
      written.push(s);
      inFlight--;
    },
  };
}

describe('StateWriter', () => {
  it('coalesces many changes into few writes, the last state always written', async () => {
    const r = recorder();
    const w = new StateWriter(r.write, 40);
    const started = performance.now();
    for (let i = 1; i <= 100; i++) {
      r.set(i);
      w.touch();
      if (i % 10 === 0) await tick(2);
    }
    // At most one write per interval while the changes came (a loaded machine stretches the ten
    // short waits), and the last: without coalescing, a hundred.
    const intervals = Math.ceil((performance.now() - started) / 40);
    await tick(120);
    expect(r.written.at(-1)).toBe(100);
    expect(r.written.length).toBeLessThanOrEqual(intervals + 2);
    expect(r.most()).toBe(1);
    await w.close();
  });

  it('writes a change made during a write once that write is done', async () => {
    const r = recorder();
    const w = new StateWriter(r.write, 0);
    r.set(1);
    w.touch();
    await tick(1);
    r.set(2);
    w.touch();
    // The second write follows the first at once; on a loaded machine its timers may come late.
    await vi.waitFor(() => expect(r.written).toEqual([1, 2]), { timeout: 2000, interval: 10 });
    expect(r.most()).toBe(1);
    await w.close();
  });

  it('keeps the interval between writes', async () => {
    const r = recorder();
    const times: number[] = [];
    const w = new StateWriter(async () => {
      times.push(Date.now());
      await r.write();
    }, 60);
    for (let i = 0; i < 3; i++) {
      r.set(i);
      w.touch();
      await tick(70);
    }
    await tick(80);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(55);
    await w.close();
  });

  it('writes nothing after close, and close waits for the write under way', async () => {
    const r = recorder();
    const w = new StateWriter(r.write, 0);
    r.set(1);
    w.touch();
    await w.flush();
    w.touch();
    r.set(2);
    await w.close();
    w.touch();
    await tick(30);
    expect(r.written).toEqual([1]);
  });
});
