/**
 * The measuring loops: sequential calls with per-call latency, and a fixed number of calls in
 * flight. Every loop is bounded both in count and in time; a loop cut short by its time bound
 * reports the calls it completed.
 */
import { percentiles } from './stats.ts';

/** One call of the operation under test; `i` is a sequence number the caller may put in the input. */
export type Call = (i: number) => Promise<unknown>;

/** What a sequential loop measured. */
export interface SequentialResult {
  /** Completed calls per second. */
  rate: number;
  /** Latency percentiles in microseconds. */
  p50_us: number;
  p99_us: number;
  calls: number;
}

/** What an in-flight loop measured. */
export interface InflightResult {
  rate: number;
  calls: number;
}

/** Calls `call` one after another, up to `count` times or until `maxMs` has passed. */
export async function sequential(call: Call, count: number, maxMs: number, offset = 0): Promise<SequentialResult> {
  const latencies = new Float64Array(count);
  const start = performance.now();
  const stop = start + maxMs;
  let n = 0;
  while (n < count) {
    const t0 = performance.now();
    await call(offset + n);
    const t1 = performance.now();
    latencies[n++] = (t1 - t0) * 1000;
    if (t1 > stop) break;
  }
  const elapsed = performance.now() - start;
  const { p50, p99 } = percentiles(Array.from(latencies.subarray(0, n)));
  return { rate: (n / elapsed) * 1000, p50_us: p50, p99_us: p99, calls: n };
}

/** Keeps `depth` calls in flight, up to `count` calls in all or until `maxMs` has passed. */
export function inflight(call: Call, count: number, depth: number, maxMs: number, offset = 0): Promise<InflightResult> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const stop = start + maxMs;
    let started = 0;
    let done = 0;
    let running = 0;
    let failed = false;
    const finish = (): void => {
      const elapsed = performance.now() - start;
      resolve({ rate: (done / elapsed) * 1000, calls: done });
    };
    const launch = (): void => {
      while (!failed && running < depth && started < count && (started === 0 || performance.now() < stop)) {
        const i = offset + started++;
        running++;
        call(i).then(
          () => {
            running--;
            done++;
            if (running === 0 && (started >= count || performance.now() >= stop)) finish();
            else launch();
          },
          (err: unknown) => {
            failed = true;
            reject(err instanceof Error ? err : new Error(String(err)));
          },
        );
      }
    };
    launch();
  });
}

/** Runs `fn` repeatedly for about `ms` (at most `count` times): warm-up for the JIT and caches. */
export async function warmUp(call: Call, count: number, ms: number): Promise<void> {
  await inflight(call, count, 8, ms, 1_000_000_000);
}

/** A synchronous operation timed in a tight loop: nanoseconds per call (count and time bounded). */
export function perCallNs(op: (i: number) => unknown, count: number, maxMs: number): { ns: number; calls: number } {
  const stop = performance.now() + maxMs;
  let sink = 0;
  const start = performance.now();
  let n = 0;
  // Check the clock every 256 calls, so the loop body stays the operation.
  while (n < count) {
    const batchEnd = Math.min(count, n + 256);
    for (; n < batchEnd; n++) if (op(n) !== undefined) sink++;
    if (performance.now() > stop) break;
  }
  const elapsed = performance.now() - start;
  if (sink === -1) console.log(sink);
  return { ns: (elapsed * 1e6) / n, calls: n };
}
