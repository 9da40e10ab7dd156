/** What the NATS scenario's rows share: its heading, its depth and how it judges a ratio. */
import { ratioRange, type Baseline, type Figure, type Target } from '../lib/report.ts';

export const SCENARIO = '7. NATS binding';
/** Tasks in flight in the round-trip rows, and records published at a time in the durable row. */
export const DEPTH = 64;

/**
 * A target on the ratio of TAP to its floor, with the ratio's spread over the repetitions; with a
 * ceiling measured beside, also where TAP stands against it and where it stands against the floor,
 * and, when the ceiling itself falls short of the target, that no implementation making the
 * ceiling's messages and operations reaches it in this run.
 */
export function ratioTarget(target: { text: string; at: number }, tap: Figure, floor: Baseline, ceiling?: Baseline): Target {
  if (floor.ratio === null || floor.not_run) return { text: target.text, measured: floor.not_run ?? 'no floor figure', met: null };
  let beside = '';
  if (ceiling && ceiling.ratio !== null && !ceiling.not_run) {
    const ceilingToFloor = floor.ratio / ceiling.ratio;
    beside = `; TAP ${ceiling.ratio.toFixed(2)}× its ceiling, which is ${ceilingToFloor.toFixed(2)}× the floor`;
    if (ceilingToFloor < target.at)
      beside += `, under the target's ${target.at}×: out of reach in this run for any implementation that makes the ceiling's messages and operations`;
  }
  return {
    text: target.text,
    measured: `${floor.ratio.toFixed(2)}× the floor (${ratioRange(tap.value, floor.value)})${beside}`,
    met: floor.ratio >= target.at,
  };
}
