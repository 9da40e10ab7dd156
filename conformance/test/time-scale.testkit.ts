/**
 * The --time-scale of a test's harness run on this machine now. A loaded machine runs timers
 * late; the scale stretches only the harness's upper bounds and its waits (spec: conformance#timing),
 * never "not before the nominal time", so a late timer of a busy test run is not taken for the agent's.
 */
import { cpus, loadavg } from 'node:os';

/** TAP_SELFTEST_TIME_SCALE when set; else the one-minute load per core, doubled and rounded up to a half, between 1 and `max`. */
export function loadTimeScale(max: number): number {
  const set = Number(process.env.TAP_SELFTEST_TIME_SCALE);
  if (set > 0) return set;
  return Math.min(max, Math.max(1, Math.ceil((loadavg()[0]! / Math.max(1, cpus().length)) * 2) / 2));
}
