/**
 * A steady load for profiling: the reference client and agent on the in-memory pair (both in this
 * process, so one profile shows both sides), echo tasks sequentially or 64 in flight, one stream
 * task, or decode + validate of captured frames. Run it under the profiler and read the result
 * with profile-top.ts:
 *   node --cpu-prof --cpu-prof-dir=/tmp/tap-prof --import tsx bench/profile.ts --mode inflight
 *   npx tsx bench/profile-top.ts /tmp/tap-prof/<file>.cpuprofile
 * `--quiet` runs the echo tasks as TAP 1.1 quiet tasks.
 */
import { parseArgs } from 'node:util';
import { decodeFrame, validateDecoded } from '../dist/reference/core/index.js';
import { inflight, perCallNs, sequential } from './lib/measure.ts';
import { tapMemory } from './lib/systems.ts';

const { values } = parseArgs({
  options: {
    /** inflight, sequential, stream or decode. */
    mode: { type: 'string', default: 'inflight' },
    calls: { type: 'string', default: '20000' },
    seconds: { type: 'string', default: '10' },
    /** Echo tasks as TAP 1.1 quiet tasks (request → result). */
    quiet: { type: 'boolean', default: false },
  },
});
const calls = Number(values.calls);
const ms = Number(values.seconds) * 1000;
const frames: Uint8Array[] = [];
const tap = await tapMemory(
  100_000,
  (entry) => {
    if (frames.length < 4 && entry.text.includes('"type":"task.')) frames.push(new TextEncoder().encode(entry.text));
  },
  { quiet: values.quiet },
);
try {
  if (values.mode === 'decode') {
    await tap.call(0);
    const op = (i: number): unknown => {
      const bytes = frames[i % frames.length]!;
      const r = decodeFrame({ bytes, oversized: false, byteLength: bytes.byteLength }, { maxMessageBytes: 1048576 });
      return r.ok ? validateDecoded(r.message) : r;
    };
    const r = perCallNs(op, calls * 100, ms);
    process.stdout.write(`decode: ${r.calls} messages, ${Math.round(r.ns)} ns each\n`);
  } else if (values.mode === 'stream') {
    const t0 = performance.now();
    const n = await tap.stream!(Math.min(calls, 100_000));
    process.stdout.write(`stream: ${n} events, ${Math.round((n / (performance.now() - t0)) * 1000)}/s\n`);
  } else {
    // Windows of 2,000 calls show how the rate moves as the agent's table of finished tasks fills.
    const stop = performance.now() + ms;
    let done = 0;
    while (done < calls && performance.now() < stop) {
      const n = Math.min(2000, calls - done);
      const r = values.mode === 'sequential' ? await sequential(tap.call, n, ms, done) : await inflight(tap.call, n, 64, ms, done);
      process.stdout.write(`${values.mode}: calls ${done + 1}–${done + r.calls}: ${Math.round(r.rate)}/s\n`);
      done += r.calls;
    }
  }
} finally {
  await tap.close();
}
