/** Summaries of repeated measurements: medians with their spread, and latency percentiles. */

/** A figure measured several times: the median and the range of the repetitions. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  /** Every repetition's value, in the order measured. */
  runs: number[];
}

/** The median and min–max of `values` (at least one). */
export function spread(values: readonly number[]): Spread {
  if (values.length === 0) throw new Error('spread of no values');
  const sorted = [...values].sort((a, b) => a - b);
  return { median: quantile(sorted, 0.5), min: sorted[0]!, max: sorted[sorted.length - 1]!, runs: [...values] };
}

/** The q-quantile (0..1) of ascending `sorted`, by linear interpolation between ranks. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

/** p50 and p99 of latencies (any unit; the caller's). */
export function percentiles(latencies: readonly number[]): { p50: number; p99: number } {
  const sorted = Float64Array.from(latencies).sort();
  return { p50: quantile(sorted as unknown as number[], 0.5), p99: quantile(sorted as unknown as number[], 0.99) };
}
