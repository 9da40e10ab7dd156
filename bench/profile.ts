/**
 * A steady load for profiling: the reference client and agent on the in-memory pair (both in this
 * process, so one profile shows both sides), echo tasks sequentially or 64 in flight, one stream
 * task, or decode + validate of captured frames. Run it under the profiler and read the result
 * with profile-top.ts:
 *   node --cpu-prof --cpu-prof-dir=/tmp/tap-prof --import tsx bench/profile.ts --mode inflight
 *   npx tsx bench/profile-top.ts /tmp/tap-prof/*.cpuprofile
 * `--quiet` runs the echo tasks as TAP 1.1 quiet tasks. `--alloc` runs the echo tasks under V8's
 * sampling heap profiler, every object counted whether or not it was collected, and prints the
 * bytes allocated per task; `--system bare4|bare2|mcp` measures a baseline of the round-trip rows
 * instead (TAP's four messages or the quiet two over bare NDJSON, the MCP SDK in memory):
 *   npx tsx bench/profile.ts --alloc --quiet
 *   npx tsx bench/profile.ts --alloc --system mcp
 */
import { Session } from 'node:inspector/promises';
import { parseArgs } from 'node:util';
import { decodeFrame, validateDecoded } from '../dist/reference/core/index.js';
import { inflight, perCallNs, sequential } from './lib/measure.ts';
import { mcpMemory } from './lib/peer-systems.ts';
import { bareFour, bareMemory, bareQuiet, captureTapTask, tapMemory, type System } from './lib/systems.ts';

const { values } = parseArgs({
  options: {
    /** inflight, sequential, stream or decode. */
    mode: { type: 'string', default: 'inflight' },
    calls: { type: 'string', default: '20000' },
    seconds: { type: 'string', default: '10' },
    /** Echo tasks as TAP 1.1 quiet tasks (request → result). */
    quiet: { type: 'boolean', default: false },
    /** Print the bytes allocated per echo task (sampling heap profiler) instead of rates. */
    alloc: { type: 'boolean', default: false },
    /** tap (the default), bare4, bare2 or mcp: the system whose echo calls are measured. */
    system: { type: 'string', default: 'tap' },
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
/** The system `--system` names, in this process on the in-memory pair. */
async function baseline(name: string): Promise<System> {
  if (name === 'mcp') return mcpMemory();
  if (name === 'bare4') return bareFour(bareMemory, await captureTapTask());
  if (name === 'bare2') return bareQuiet(bareMemory, await captureTapTask());
  throw new Error(`--system ${name}: expected tap, bare4, bare2 or mcp`);
}

/**
 * Bytes allocated per call of `call`, 64 in flight, after a warm-up: the sampling heap profiler
 * (one sample per 512 bytes on average) keeps objects a GC collected, so the sum is what was allocated.
 */
async function allocatedPerCall(call: System['call']): Promise<{ perCall: number; sites: Array<[string, number]> }> {
  await inflight(call, Math.min(calls, 5000), 64, ms);
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 512,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  const r = await inflight(call, calls, 64, ms);
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as { profile: { head: AllocationNode } };
  session.disconnect();
  // Bytes per allocating function (self size), summed over the call tree.
  const sites = new Map<string, number>();
  const walk = (node: AllocationNode): void => {
    const f = node.callFrame;
    const key = `${f.functionName || '(anonymous)'}  ${f.url.replace(/^file:\/\/.*?\/(dist|node_modules)\//, '$1/')}:${f.lineNumber + 1}`;
    if (node.selfSize > 0) sites.set(key, (sites.get(key) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  const total = [...sites.values()].reduce((a, b) => a + b, 0);
  const top = [...sites].sort((a, b) => b[1] - a[1]).slice(0, 20);
  return { perCall: total / r.calls, sites: top.map(([k, v]) => [k, v / r.calls]) };
}

interface AllocationNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: AllocationNode[];
}

try {
  if (values.alloc) {
    const system = values.system === 'tap' ? tap : await baseline(values.system);
    try {
      const { perCall, sites } = await allocatedPerCall(system.call);
      process.stdout.write(`${system.name}: ${Math.round(perCall)} bytes allocated per task; the sites allocating most, bytes per task:\n`);
      for (const [site, bytes] of sites) process.stdout.write(`${String(Math.round(bytes)).padStart(7)}  ${site}\n`);
    } finally {
      if (system !== tap) await system.close();
    }
  } else if (values.mode === 'decode') {
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
