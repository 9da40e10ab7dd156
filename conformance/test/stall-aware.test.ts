import { describe, expect, it } from 'vitest';
import { FROZEN_SLACK_MS as STALL_SLACK_MS } from '../../reference/core/frozen.ts';
import type { Clock } from '../../reference/core/platform.ts';
import { pollUntil, STALL_CHECK_MS, stallAwareTimeout, type PollClock } from '../stall-aware.ts';
import { Waits } from '../waits.ts';
import { poll } from '../workspace/observe.ts';
import type { Received } from '../findings.ts';

/** A clock that moves only when the poll sleeps: each pause takes what `pauses` says, in turn (else what was asked). */
function fakeClock(pauses: number[] = []): PollClock {
  let t = 0;
  return { now: () => t, sleep: async (ms) => void (t += pauses.shift() ?? ms) };
}

describe('a poll that does not count stalls (conformance/stall-aware.ts)', () => {
  it('gives up after its time when nothing stalls', async () => {
    let calls = 0;
    const v = await pollUntil(async () => void calls++, 1000, 25, fakeClock());
    expect(v).toBeUndefined();
    expect(calls).toBe(42); // at 0, 25, …, 1025 ms: the first call after the deadline is the last
  });

  it('adds a pause far longer than asked to its time: the value that comes after a 5 s stall is seen', async () => {
    let calls = 0;
    // The third pause takes 5 s: the machine gave the harness no CPU.
    const v = await pollUntil(async () => (++calls === 20 ? 'dead letter' : undefined), 1000, 25, fakeClock([25, 25, 5000]));
    expect(v).toBe('dead letter');
  });

  it('counts a pause late by less than the slack as running time', async () => {
    let calls = 0;
    const late = 25 + STALL_SLACK_MS;
    const v = await pollUntil(async () => (++calls === 10 ? 'x' : undefined), 1000, 25, fakeClock(Array(10).fill(late)));
    expect(v).toBeUndefined();
    expect(calls).toBe(5); // 0, 275, 550, 825, 1100 ms
  });

  it('takes a get that rejects for no value', async () => {
    let calls = 0;
    const v = await pollUntil(async () => (++calls < 3 ? Promise.reject(new Error('no stream yet')) : 7), 1000, 25, fakeClock());
    expect(v).toBe(7);
  });
});

/**
 * Timers on a clock of their own: `run(ms)` moves it on, firing what falls due in order; `stall(ms)`
 * moves it on with nothing fired, as a machine that gave the process no CPU, the timers due in it
 * firing late, at its end.
 */
function fakeTimers(): Clock & { run(ms: number): void; stall(ms: number): void } {
  let t = 0;
  let next = 0;
  const due = new Map<number, { at: number; fn: () => void }>();
  const fireUntil = (end: number): void => {
    for (;;) {
      const first = [...due.entries()].sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
      if (!first || first[1].at > end) break;
      due.delete(first[0]);
      t = Math.max(t, first[1].at);
      first[1].fn();
    }
    t = end;
  };
  return {
    now: () => t,
    setTimeout: (fn, ms) => {
      due.set(++next, { at: t + ms, fn });
      return next;
    },
    clearTimeout: (h) => void due.delete(h as number),
    run: (ms) => fireUntil(t + ms),
    stall: (ms) => {
      const end = t + ms;
      for (const d of due.values()) d.at = Math.max(d.at, end);
      t = end;
      fireUntil(end);
    },
  };
}

describe('a timeout that does not count stalls (stallAwareTimeout)', () => {
  it('fires when its time has run, to the millisecond, looking at the clock every STALL_CHECK_MS', () => {
    const clock = fakeTimers();
    let firedAt: number | undefined;
    stallAwareTimeout(1000, () => (firedAt = clock.now()), clock);
    clock.run(999);
    expect(firedAt).toBeUndefined();
    clock.run(1);
    expect(firedAt).toBe(1000);
    expect(STALL_CHECK_MS).toBeLessThan(1000);
  });

  it('adds a 5 s stall to its time: a wait of 1 s begun before it has its time left after it, less at most a look and the slack', () => {
    const clock = fakeTimers();
    let firedAt: number | undefined;
    const timer = stallAwareTimeout(1000, () => (firedAt = clock.now()), clock);
    clock.run(100);
    clock.stall(5000);
    expect(firedAt).toBeUndefined();
    // What a stall may still take from the wait: the look it delayed and the slack.
    const left = 1000 - 100 - STALL_CHECK_MS - STALL_SLACK_MS;
    expect(timer.remaining()).toBeGreaterThanOrEqual(left);
    clock.run(2000);
    expect(firedAt).toBeGreaterThanOrEqual(5100 + left);
  });

  it('counts a look late by less than the slack as running time, and stops when cancelled', () => {
    const clock = fakeTimers();
    let fired = 0;
    stallAwareTimeout(1000, () => fired++, clock);
    clock.stall(STALL_CHECK_MS + STALL_SLACK_MS); // the first look comes late, within the slack
    clock.run(1000 - STALL_CHECK_MS - STALL_SLACK_MS);
    expect(fired).toBe(1);
    const t = stallAwareTimeout(1000, () => fired++, clock);
    t.cancel();
    clock.run(5000);
    expect(fired).toBe(1);
  });
});

describe("a harness connection's waits (conformance/waits.ts) do not count stalls", () => {
  const rec = (index: number, type: string): Received => ({ index, msg: { type } }) as unknown as Received;

  it('a message that comes after a stall within its wait is seen; without one, the wait ends at its time', async () => {
    const clock = fakeTimers();
    const received: Received[] = [];
    const waits = new Waits(received, 0, (ms, fire) => stallAwareTimeout(ms, fire, clock));
    waits.heard();
    const late = waits.message((r) => r.msg.type === 'task.result', 1000, 0, false);
    clock.run(200);
    clock.stall(5000);
    const r = rec(0, 'task.result');
    received.push(r);
    waits.arrived(r);
    expect(await late).toBe(r);
    const never = waits.message((r) => r.msg.type === 'pong', 1000, 1, false);
    clock.run(1000);
    expect(await never).toBeUndefined();
    const close = waits.closed(false, 1000);
    clock.stall(3000);
    waits.ended();
    expect(await close).toBe(true);
  });
});

describe("the workspace cases' poll (conformance/workspace/observe.ts) does not count stalls", () => {
  it('sees a value that comes after the event loop was held 1.5 s inside a wait of 0.8 s; a wait for nothing still ends', async () => {
    let stallEnd = Number.POSITIVE_INFINITY;
    setTimeout(() => {
      const until = Date.now() + 1500;
      while (Date.now() < until); // the process gets no turn, as on a host that gave it no CPU
      stallEnd = Date.now();
    }, 50);
    const started = Date.now();
    const v = await poll(() => (Date.now() >= stallEnd + 100 ? 'renamed' : null), 800);
    expect(v).toBe('renamed');
    expect(Date.now() - started).toBeGreaterThan(1600);
    expect(await poll(() => null, 300)).toBeNull();
  });
});
