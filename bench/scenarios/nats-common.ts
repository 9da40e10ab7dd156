/** What the NATS scenario's rows share: its heading, its depth and how it judges a ratio. */
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
