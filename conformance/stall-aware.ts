/**
 * Waits that do not count time in which the harness could not run. On a shared host a virtual
 * machine can get no CPU at all for seconds (steal): the agent under test is frozen as long as the
 * harness, so a wait for something the agent does must not run out during it. A pause between two
 * polls far longer than asked for is counted as such a stall and added to the wait.
 */

/** How much later than asked a pause may end before the excess counts as a stall, in ms. */
export const STALL_SLACK_MS = 250;

/** The clock and pause a poll uses: the real ones unless a test gives its own. */
export interface PollClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const REAL: PollClock = { now: () => Date.now(), sleep: (ms) => new Promise((r) => setTimeout(r, ms)) };

/**
 * Calls `get` every `everyMs` until it gives a value, or until `ms` of running time have passed
 * (stalls not counted); a `get` that rejects counts as no value. Resolves with the value, or
 * undefined.
 */
export async function pollUntil<T>(
  get: () => Promise<T | undefined>,
  ms: number,
  everyMs = 25,
  clock: PollClock = REAL,
): Promise<T | undefined> {
  let deadline = clock.now() + ms;
  for (;;) {
    const v = await get().catch(() => undefined);
    if (v !== undefined || clock.now() > deadline) return v;
    const before = clock.now();
    await clock.sleep(everyMs);
    deadline += Math.max(0, clock.now() - before - everyMs - STALL_SLACK_MS);
  }
}
