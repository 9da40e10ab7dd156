/**
 * Waits that do not count time in which the harness could not run. On a shared host a virtual
 * machine can get no CPU at all for seconds (steal): the agent under test is frozen as long as the
 * harness, so a wait for something the agent does must not run out during it. A pause between two
 * polls far longer than asked for is counted as such a stall and added to the wait.
 */
import { systemClock } from '../reference/agent/options.ts';
import { frozenFor } from '../reference/core/frozen.ts';
import type { Clock, TimerHandle } from '../reference/core/platform.ts';

/** The clock and pause a poll uses: the real ones unless a test gives its own. */
export interface PollClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const REAL: PollClock = { now: () => Date.now(), sleep: (ms) => new Promise((r) => setTimeout(r, ms)) };

/**
 * Calls `get` every `everyMs` until it gives a value, or until `ms` of running time have passed
 * (stalls not counted); a `get` that rejects rejects the poll. Resolves with the value, or
 * undefined.
 */
export async function pollFor<T>(
  get: () => Promise<T | undefined> | T | undefined,
  ms: number,
  everyMs = 25,
  clock: PollClock = REAL,
): Promise<T | undefined> {
  let deadline = clock.now() + ms;
  for (;;) {
    const v = await get();
    if (v !== undefined || clock.now() > deadline) return v;
    const before = clock.now();
    await clock.sleep(everyMs);
    deadline += frozenFor(before, everyMs, clock.now());
  }
}

/** pollFor, a `get` that rejects counting as no value. */
export function pollUntil<T>(get: () => Promise<T | undefined>, ms: number, everyMs = 25, clock: PollClock = REAL): Promise<T | undefined> {
  return pollFor(() => get().catch(() => undefined), ms, everyMs, clock);
}

/** How often a stall-aware timeout looks at the clock, in ms. */
export const STALL_CHECK_MS = 250;

/** A running stall-aware timeout. */
export interface StallAwareTimeout {
  /** Stops it: `fire` is not called. */
  cancel(): void;
  /** Running time left before it fires, in ms (stalls so far not counted). */
  remaining(): number;
}

/**
 * Calls `fire` once `ms` of running time have passed: the clock is looked at every
 * STALL_CHECK_MS, and a look that comes later than asked by more than the slack of
 * reference/core/frozen.ts adds the excess to the wait, as pollUntil does.
 */
export function stallAwareTimeout(ms: number, fire: () => void, clock: Clock = systemClock): StallAwareTimeout {
  let deadline = clock.now() + ms;
  let handle: TimerHandle;
  const arm = (): void => {
    const step = Math.max(0, Math.min(STALL_CHECK_MS, deadline - clock.now()));
    const before = clock.now();
    handle = clock.setTimeout(() => {
      const now = clock.now();
      deadline += frozenFor(before, step, now);
      if (now >= deadline) fire();
      else arm();
    }, step);
  };
  arm();
  return {
    cancel: () => clock.clearTimeout(handle),
    remaining: () => Math.max(0, deadline - clock.now()),
  };
}
