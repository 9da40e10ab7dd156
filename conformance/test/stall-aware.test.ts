import { describe, expect, it } from 'vitest';
import { pollUntil, STALL_SLACK_MS, type PollClock } from '../stall-aware.ts';

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
