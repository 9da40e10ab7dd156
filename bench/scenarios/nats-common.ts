/** What the NATS scenario's rows share: its heading, its depth, how it starts children and judges a ratio. */
import type { LineChild } from '../lib/children.ts';
import { ratioRange, type Baseline, type Figure, type Target } from '../lib/report.ts';

export const SCENARIO = '7. NATS binding';
/** Tasks in flight in the round-trip rows, and records published at a time in the durable row. */
export const DEPTH = 64;

/** A target on the ratio of TAP to its floor, with the ratio's spread over the repetitions. */
export function ratioTarget(target: { text: string; at: number }, tap: Figure, floor: Baseline): Target {
  if (floor.ratio === null || floor.not_run) return { text: target.text, measured: floor.not_run ?? 'no floor figure', met: null };
  return {
    text: target.text,
    measured: `${floor.ratio.toFixed(2)}× the floor (${ratioRange(tap.value, floor.value)})`,
    met: floor.ratio >= target.at,
  };
}

/** Waits for each child's "ready" line; stops them all if one does not come. */
export async function started(children: LineChild[], what: string): Promise<void> {
  try {
    await Promise.all(children.map((c, i) => c.line((l) => l === 'ready', 60_000, `${what} ${i} starting`)));
  } catch (err) {
    await Promise.all(children.map((c) => c.stop(1000)));
    throw err;
  }
}
