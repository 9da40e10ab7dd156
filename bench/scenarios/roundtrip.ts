/**
 * Scenario 1, task round trip: tap.test.echo (request → accepted → result) through the reference
 * client and agent over stdio, WebSocket and the in-memory pair, sequentially (rate, p50, p99)
 * and with 64 calls in flight, against the bare NDJSON floor of the same transport, the MCP SDK
 * (stdio, in-memory) and vscode-jsonrpc (stdio), all measured in the same run, repetitions
 * interleaved so that a slow moment of the machine hits every system alike. Over stdio and in
 * memory, the TAP 1.1 quiet task (request → result) has rows of its own, measured in the same
 * repetitions, against its ceiling (bare NDJSON sending the quiet flow's two messages), MCP and
 * the four-message task (spec: tasks#quiet-tasks).
 */
import type { Budget } from '../lib/options.ts';
import { type CpuPerTask, measuringCpu } from '../lib/cpu.ts';
import { inflight, sequential, warmUp } from '../lib/measure.ts';
import { compare, missingBaseline, notRun, ratioRange, type Baseline, type Figure, type Row, type Target } from '../lib/report.ts';
import { spread, type Spread } from '../lib/stats.ts';
import * as peerSystems from '../lib/peer-systems.ts';
import * as systems from '../lib/systems.ts';
import type { System, TransportKind } from '../lib/systems.ts';

const SCENARIO = '1. Task round trip (tap.test.echo)';
const DEPTH = 64;

interface Candidate {
  id: string;
  name: string;
  make: () => Promise<System>;
}

/** The four messages of a TAP echo task, captured once per run for the four-message floor. */
let captured: Promise<systems.TapTaskTexts> | undefined;
const tapTask = (): Promise<systems.TapTaskTexts> => (captured ??= systems.captureTapTask());
const FOUR = "bare NDJSON, TAP's four messages a task (ceiling)";
const TWO = "bare NDJSON, the quiet task's two messages (quiet ceiling)";
/** The systems that only the quiet rows compare: the quiet task and its ceiling. */
const QUIET_ONLY = new Set(['quiet', 'bare2']);
/** The systems that only the four-message rows compare: TAP operated with tracing and an audit trail, and TAP counting nothing for /metrics. */
const FOUR_ONLY = new Set(['ops', 'uncounted']);

const TRANSPORTS: Record<TransportKind, { label: string; candidates: Candidate[] }> = {
  stdio: {
    label: 'stdio (agent in a child process)',
    candidates: [
      { id: 'tap', name: 'TAP (reference client + reference agent)', make: () => systems.tapStdio() },
      { id: 'quiet', name: systems.QUIET_NAME, make: () => systems.tapStdio(100_000, { quiet: true }) },
      { id: 'bare', name: 'bare NDJSON echo (floor)', make: () => systems.bareStdio() },
      { id: 'bare4', name: FOUR, make: async () => systems.bareFour(systems.bareStdio, await tapTask()) },
      { id: 'bare2', name: TWO, make: async () => systems.bareQuiet(systems.bareStdio, await tapTask()) },
      { id: 'mcp', name: 'MCP TypeScript SDK (tools/call echo)', make: () => peerSystems.mcpStdio() },
      { id: 'jsonrpc', name: 'vscode-jsonrpc (echo request)', make: () => peerSystems.jsonrpcStdio() },
    ],
  },
  websocket: {
    label: 'WebSocket on 127.0.0.1 (agent in a child process)',
    candidates: [
      { id: 'tap', name: 'TAP (reference client + reference agent)', make: () => systems.tapWebSocket() },
      { id: 'bare', name: 'bare NDJSON echo over ws (floor)', make: () => systems.bareWebSocket() },
      { id: 'bare4', name: FOUR, make: async () => systems.bareFour(systems.bareWebSocket, await tapTask()) },
    ],
  },
  memory: {
    label: 'in-memory pair (one process)',
    candidates: [
      { id: 'tap', name: 'TAP (reference client + reference agent)', make: () => systems.tapMemory() },
      { id: 'quiet', name: systems.QUIET_NAME, make: () => systems.tapMemory(100_000, undefined, { quiet: true }) },
      { id: 'ops', name: systems.OPS_NAME, make: () => systems.tapMemory(100_000, undefined, { ops: true }) },
      { id: 'uncounted', name: systems.UNCOUNTED_NAME, make: () => systems.tapMemory(100_000, undefined, { uncounted: true }) },
      { id: 'bare', name: 'bare NDJSON echo over the memory pair (floor)', make: () => systems.bareMemory() },
      { id: 'bare4', name: FOUR, make: async () => systems.bareFour(systems.bareMemory, await tapTask()) },
      { id: 'bare2', name: TWO, make: async () => systems.bareQuiet(systems.bareMemory, await tapTask()) },
      { id: 'mcp', name: 'MCP TypeScript SDK, InMemoryTransport (tools/call echo)', make: () => peerSystems.mcpMemory() },
    ],
  },
};

/** The transports whose rows include the quiet task's. */
const hasQuiet = (kind: TransportKind): boolean => TRANSPORTS[kind].candidates.some((c) => c.id === 'quiet');

/** The row ids of one transport: the four-message task's, then the quiet task's where it is measured. */
function rowIdsOf(kind: TransportKind): string[] {
  const ids = [`roundtrip.${kind}.sequential`, `roundtrip.${kind}.inflight64`];
  if (hasQuiet(kind)) ids.push(`roundtrip.${kind}.quiet.sequential`, `roundtrip.${kind}.quiet.inflight64`);
  return ids;
}

/** The row ids this scenario produces. */
export function roundtripRowIds(): string[] {
  return (Object.keys(TRANSPORTS) as TransportKind[]).flatMap(rowIdsOf);
}

/** Runs the scenario for the transports whose rows are selected. */
export async function roundtrip(budget: Budget, selected: (id: string) => boolean, log: (line: string) => void): Promise<Row[]> {
  const rows: Row[] = [];
  for (const kind of Object.keys(TRANSPORTS) as TransportKind[]) {
    const ids = rowIdsOf(kind);
    if (!ids.some(selected)) continue;
    log(`round trip over ${kind}`);
    const out = await overTransport(kind, budget, log);
    rows.push(...out.filter((row) => selected(row.id)));
  }
  return rows;
}

async function overTransport(kind: TransportKind, budget: Budget, log: (line: string) => void): Promise<Row[]> {
  const { label, candidates } = TRANSPORTS[kind];
  const method =
    `${label}; one warm-up of up to ${budget.warmupCalls} calls, then ${budget.reps} repetitions interleaved across systems, ` +
    `each of up to ${budget.sequentialCalls} sequential calls / ${budget.inflightCalls} calls with ${DEPTH} in flight (at most ${budget.repMs / 1000} s each)`;
  const seqBase = {
    id: `roundtrip.${kind}.sequential`,
    scenario: SCENARIO,
    title: `${kind}, sequential`,
    unit: 'calls/s',
    better: 'higher' as const,
    method,
  };
  const flyBase = {
    id: `roundtrip.${kind}.inflight64`,
    scenario: SCENARIO,
    title: `${kind}, ${DEPTH} in flight`,
    unit: 'calls/s',
    better: 'higher' as const,
    method,
  };
  const live: Array<{ c: Candidate; s: System }> = [];
  const failed = new Map<string, string>();
  for (const c of candidates) {
    try {
      const s = await c.make();
      await warmUp(s.call, budget.warmupCalls, budget.warmupMs);
      live.push({ c, s });
    } catch (err) {
      failed.set(c.id, oneLine(err));
      log(`  ${c.name}: ${oneLine(err)}`);
    }
  }
  const seq = new Map<string, { rate: number[]; p50: number[]; p99: number[] }>();
  const fly = new Map<string, number[]>();
  // CPU µs per task of each system's repetitions, sequential and in flight (requester, agent).
  const seqCpu = new Map<string, CpuPerTask[]>();
  const flyCpu = new Map<string, CpuPerTask[]>();
  const keepCpu = (into: Map<string, CpuPerTask[]>, id: string, cpu: CpuPerTask): void => {
    into.set(id, [...(into.get(id) ?? []), cpu]);
  };
  try {
    for (let rep = 0; rep < budget.reps; rep++) {
      for (const { c, s } of rotate(live, rep)) {
        try {
          const r = await measuringCpu(s.pid, () => sequential(s.call, budget.sequentialCalls, budget.repMs));
          keepCpu(seqCpu, c.id, r.cpu);
          const e = seq.get(c.id) ?? { rate: [], p50: [], p99: [] };
          e.rate.push(r.rate);
          e.p50.push(r.p50_us);
          e.p99.push(r.p99_us);
          seq.set(c.id, e);
        } catch (err) {
          failed.set(c.id, oneLine(err));
        }
      }
      for (const { c, s } of rotate(live, rep)) {
        if (failed.has(c.id)) continue;
        try {
          const r = await measuringCpu(s.pid, () => inflight(s.call, budget.inflightCalls, DEPTH, budget.repMs));
          keepCpu(flyCpu, c.id, r.cpu);
          fly.set(c.id, [...(fly.get(c.id) ?? []), r.rate]);
        } catch (err) {
          failed.set(c.id, oneLine(err));
        }
      }
      log(
        `  repetition ${rep + 1}/${budget.reps}: ${live.map(({ c }) => `${c.id} ${Math.round(seq.get(c.id)?.rate.at(-1) ?? NaN)}/${Math.round(fly.get(c.id)?.at(-1) ?? NaN)}`).join(', ')}`,
      );
    }
  } finally {
    for (const { s } of live) await s.close().catch(() => {});
  }

  const seqFigure = (c: Candidate): Figure | null => {
    const e = seq.get(c.id);
    if (!e || failed.has(c.id)) return null;
    return { name: c.name, value: spread(e.rate), extra: { p50_us: spread(e.p50), p99_us: spread(e.p99), ...cpuExtra(seqCpu.get(c.id)) } };
  };
  const flyFigure = (c: Candidate): Figure | null => {
    const e = fly.get(c.id);
    if (!e || failed.has(c.id)) return null;
    return { name: c.name, value: spread(e), extra: cpuExtra(flyCpu.get(c.id)) };
  };
  const build = (
    base: typeof seqBase,
    figureOf: (c: Candidate) => Figure | null,
    targets: (tap: Figure, baselines: Baseline[]) => Target[],
    targetTexts: string[],
    subject = 'tap',
  ): Row => {
    const tapCandidate = candidates.find((c) => c.id === subject)!;
    const tap = figureOf(tapCandidate);
    if (!tap) return notRun(base, `${tapCandidate.name} over ${kind} failed: ${failed.get(subject) ?? 'no figure'}`, targetTexts);
    // The four-message rows stay as they were; the quiet rows compare the quiet task with every other system.
    const baselines = candidates
      .filter((c) => c.id !== subject && (subject !== 'tap' || !QUIET_ONLY.has(c.id)) && (subject !== 'quiet' || !FOUR_ONLY.has(c.id)))
      .map((c) => {
        const f = figureOf(c);
        return f ? compare(tap, c.id, f) : missingBaseline(c.id, c.name, failed.get(c.id) ?? 'no figure');
      });
    return { ...base, tap, baselines, targets: targets(tap, baselines) };
  };

  const p99Target = 'Sequential p99 under 300 µs over stdio';
  const p99McpTarget = "Sequential p99 over stdio within 1.5× of the MCP SDK's";
  const mcpTarget = `The four-message task with ${DEPTH} in flight at least 0.6× its ceiling (TAP's four messages over bare NDJSON) over ${kind}`;
  const sequentialRow = build(
    seqBase,
    seqFigure,
    (tap, baselines) => {
      if (kind !== 'stdio') return [];
      const p99 = tap.extra!.p99_us!;
      const out: Target[] = [
        {
          text: p99Target,
          measured: `p99 ${Math.round(p99.median)} µs (${Math.round(p99.min)}–${Math.round(p99.max)} over ${p99.runs.length} repetitions)`,
          met: p99.median < 300,
        },
      ];
      const mcp = baselines.find((b) => b.id === 'mcp')?.extra?.p99_us;
      if (!mcp) out.push({ text: p99McpTarget, measured: 'MCP not measured', met: null });
      else {
        const ratio = p99.median / mcp.median;
        out.push({
          text: p99McpTarget,
          measured: `TAP p99 ${ratio.toFixed(2)}× MCP's (${ratioRange(p99, mcp)}; MCP p99 ${Math.round(mcp.median)} µs)`,
          met: ratio <= 1.5,
        });
      }
      return out;
    },
    kind === 'stdio' ? [p99Target, p99McpTarget] : [],
  );
  const hasMcp = candidates.some((c) => c.id === 'mcp');
  const inflightRow = build(
    flyBase,
    flyFigure,
    (_tap, baselines) => {
      if (!hasMcp) return [];
      const mcp = baselines.find((b) => b.id === 'mcp');
      // How far any protocol with TAP's four messages a task could go here: the ceiling.
      const four = baselines.find((b) => b.id === 'bare4');
      if (!four || four.ratio === null) return [{ text: mcpTarget, measured: 'the ceiling not measured', met: null }];
      const beside = mcp?.ratio != null ? `; TAP ${mcp.ratio.toFixed(2)}× MCP (${ratioRange(_tap.value, mcp.value)})` : '';
      return [
        {
          text: mcpTarget,
          measured: `${four.ratio.toFixed(2)}× the ceiling (${ratioRange(_tap.value, four.value)})${beside}`,
          met: four.ratio >= 0.6,
        },
      ];
    },
    hasMcp ? [mcpTarget] : [],
  );
  if (!hasQuiet(kind)) return [sequentialRow, inflightRow];
  const quietGoal = kind === 'stdio' ? 1.5 : 1;
  const quietTarget = `The quiet task with ${DEPTH} in flight at least ${quietGoal}× the MCP SDK's tools/call over ${kind}`;
  const quietCeilingTarget = `The quiet task with ${DEPTH} in flight at least 0.6× the quiet ceiling (its two messages over bare NDJSON) over ${kind}`;
  const quietSequential = build(
    {
      ...seqBase,
      id: `roundtrip.${kind}.quiet.sequential`,
      title: `${kind}, sequential, TAP 1.1 quiet task (request → result)`,
    },
    seqFigure,
    () => [],
    [],
    'quiet',
  );
  const quietInflight = build(
    {
      ...flyBase,
      id: `roundtrip.${kind}.quiet.inflight64`,
      title: `${kind}, ${DEPTH} in flight, TAP 1.1 quiet task (request → result)`,
    },
    flyFigure,
    (quiet, baselines) => {
      const mcp = baselines.find((b) => b.id === 'mcp');
      const two = baselines.find((b) => b.id === 'bare2');
      const out: Target[] = [];
      if (!mcp || mcp.ratio === null) out.push({ text: quietTarget, measured: 'MCP not measured', met: null });
      else {
        const ceiling =
          two?.value && two.value.median > 0 ? `; the quiet ceiling is ${(two.value.median / mcp.value!.median).toFixed(2)}× MCP` : '';
        out.push({
          text: quietTarget,
          measured: `quiet TAP ${mcp.ratio.toFixed(2)}× MCP (${ratioRange(quiet.value, mcp.value)})${ceiling}`,
          met: mcp.ratio >= quietGoal,
        });
      }
      if (!two || two.ratio === null) out.push({ text: quietCeilingTarget, measured: 'the quiet ceiling not measured', met: null });
      else
        out.push({
          text: quietCeilingTarget,
          measured: `${two.ratio.toFixed(2)}× the quiet ceiling (${ratioRange(quiet.value, two.value)})`,
          met: two.ratio >= 0.6,
        });
      return out;
    },
    [quietTarget, quietCeilingTarget],
    'quiet',
  );
  return [sequentialRow, inflightRow, quietSequential, quietInflight];
}

/**
 * CPU µs per task as secondary figures: the requester's and the agent's when the agent is a child;
 * one figure for both sides when they share this process (no child to read).
 */
export function cpuExtra(runs: CpuPerTask[] | undefined): Record<string, Spread> {
  if (!runs || runs.length === 0) return {};
  const agent = runs.map((r) => r.agent_cpu_us).filter((v): v is number => v !== undefined);
  if (agent.length === 0) return { cpu_both_us: spread(runs.map((r) => r.requester_cpu_us)) };
  return { cpu_requester_us: spread(runs.map((r) => r.requester_cpu_us)), cpu_agent_us: spread(agent) };
}

/** The list rotated by `n`, so that no system always runs first. */
function rotate<T>(list: T[], n: number): T[] {
  if (list.length === 0) return list;
  const k = n % list.length;
  return [...list.slice(k), ...list.slice(0, k)];
}

/** An error as one line. */
export function oneLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0]!.slice(0, 300);
}
