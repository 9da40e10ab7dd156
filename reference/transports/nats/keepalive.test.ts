import { describe, expect, it } from 'vitest';
import { FROZEN_SLACK_MS } from '../../core/frozen.ts';
import { SilenceWatch } from './keepalive.ts';

/** A watch on a clock of the test's own, checked at the times given. */
function watchAt(silenceMs: number): { watch: SilenceWatch; at: (t: number) => boolean; heardAt: (t: number) => void } {
  let now = 0;
  const watch = new SilenceWatch(silenceMs, () => now);
  return {
    watch,
    at: (t) => {
      now = t;
      return watch.check();
    },
    heardAt: (t) => {
      now = t;
      watch.heard();
    },
  };
}

describe("a NATS connection's watch on the peer's silence (spec: bindings-nats#liveness)", () => {
  it('counts the peer lost once it has been silent longer than the silence, checked on time', () => {
    const { watch, at, heardAt } = watchAt(3000);
    expect(watch.everyMs).toBe(500);
    for (let t = 500; t <= 3000; t += 500) expect(at(t)).toBe(false);
    expect(at(3500)).toBe(true);
    heardAt(3600);
    expect(at(4000)).toBe(false);
  });

  it("does not count time in which this process could not run as the peer's silence: a check 4.5 s late after a freeze", () => {
    const { at } = watchAt(3000);
    expect(at(500)).toBe(false);
    expect(at(1000)).toBe(false);
    // The machine gave no process CPU from about 1 s to 6 s: the peer's keepalives wait unread.
    expect(at(6000)).toBe(false);
    expect(at(6500)).toBe(false);
    expect(at(7000)).toBe(false);
    // A peer that is really gone is counted lost about one silence after the freeze (less the slack
    // the freeze may take), where it was counted lost at once.
    expect(at(7500)).toBe(true);
  });

  it('counts a check late by no more than the slack as running time', () => {
    const { at } = watchAt(3000);
    let t = 0;
    for (let i = 0; i < 4; i++) expect(at((t += 500 + FROZEN_SLACK_MS))).toBe(false); // 750, 1500, 2250, 3000
    expect(at((t += 500 + FROZEN_SLACK_MS))).toBe(true);
  });
});
