/**
 * The rows of the mesh throughput scenario (mesh-throughput.ts measures, this file says what was
 * measured): their ids and descriptions, the figures of the repetitions, with the CPU each side
 * spent per task, and the targets judged on them.
 */
import { sideCpuExtras, type SideCpu } from '../lib/cpu.ts';
import { compare, notRun, ratioRange, type Row } from '../lib/report.ts';
import type { Budget } from '../lib/options.ts';
import { spread, type Spread } from '../lib/stats.ts';

export const SCENARIO = '8. Mesh';
export const PER_AGENT = 5;
/** The processes that serve the whole fleet in the hosted rows. */
export const HOSTS = 2;
/** The issue's target for the mesh: a ratio to the bare floor measured in the same run, and a latency. */
export const MESH_FLOOR_TARGET = '20 agent processes × 5 in flight at least 0.5× the bare NATS floor with 20 responders, P95 under 20 ms';
/** The offered load of the stated target: 400 tasks a second. */
export const STATED_RATE = 400;

export const IDS = {
  tap: 'mesh.throughput',
  quiet: 'mesh.throughput.quiet',
  hosted: 'mesh.throughput.hosted',
  hostedQuiet: 'mesh.throughput.hosted.quiet',
} as const;

export const THROUGHPUT_ROW_IDS: readonly string[] = Object.values(IDS);

export type RowBase = Omit<Row, 'tap' | 'baselines' | 'targets' | 'not_run'>;

/** What one measured loop gave: calls per second, the P95 of their latencies in ms, and the CPU each side spent per call. */
export interface Driven {
  rate: number;
  p95: number;
  cpu?: SideCpu;
}

/** The rows' descriptions for a budget's fleet, warm-up and repetitions. */
export function rowBases(budget: Budget): Record<keyof typeof IDS, RowBase> {
  const fleet = budget.meshAgents;
  const reps = Math.min(budget.reps, 3);
  const base = (id: string, title: string, method: string): RowBase => ({
    id,
    scenario: SCENARIO,
    title,
    unit: 'calls/s',
    better: 'higher',
    method,
  });
  const perProcess = `one Mesh requester, least-loaded routing over ${fleet} agent processes joined to the registry (with its default heartbeat, 5 s), ${fleet * PER_AGENT} tasks in flight, after a warm-up of at least ${(budget.meshWarmPerAgent * fleet).toLocaleString('en-US')} tasks that goes on, in windows of ${(fleet * PER_AGENT * 200).toLocaleString('en-US')}, until two windows in a row beat the best before them by less than 5 % (at most ${budget.meshSettleMs / 1000} s more; the floor warmed up the same way, each system's warm-up in the details); a message is a round trip (task.request → task.result); floor: NATS request/reply to ${fleet} bare responder processes at the same depth; the stated target of ${STATED_RATE} messages/s with P95 under 80 ms is judged on a run that offers ${STATED_RATE} tasks a second whatever the earlier ones are doing (an open loop; at most 5 s a repetition), the others on the saturated figure; CPU per task over each measured repetition: the requester (the bench process), the processes that answer (the agents, or the floor's responders) together, and nats-server; ${reps} repetitions on one fleet`;
  const hosted = `the same ${fleet} agents, served by ${HOSTS} agent-host processes (--ids, ${fleet / HOSTS} agents each) instead of one process each; the same requester, depth, warm-up and floor, the floor measured again in turn with these rows; not the issue's setup, so not judged against its target`;
  return {
    tap: base(IDS.tap, `${fleet} agent processes × ${PER_AGENT} tasks in flight through the mesh (tap.test.echo)`, perProcess),
    quiet: base(
      IDS.quiet,
      `${fleet} agent processes × ${PER_AGENT} TAP 1.1 quiet tasks in flight through the mesh (tap.test.echo)`,
      `as mesh.throughput, each task a TAP 1.1 quiet task (Mesh.task with quiet: true; two messages, as many as the floor's); the same fleet and floor, measured in turn with it`,
    ),
    hosted: base(
      IDS.hosted,
      `${fleet} agents in ${HOSTS} processes × ${PER_AGENT} tasks in flight through the mesh (tap.test.echo)`,
      hosted,
    ),
    hostedQuiet: base(
      IDS.hostedQuiet,
      `${fleet} agents in ${HOSTS} processes × ${PER_AGENT} TAP 1.1 quiet tasks in flight through the mesh (tap.test.echo)`,
      `as mesh.throughput.hosted, each task a TAP 1.1 quiet task`,
    ),
  };
}

/** The throughput rows, or each selected one not run with `reason`. */
export function throughputNotRun(budget: Budget, selected: (id: string) => boolean, reason: string): Row[] {
  const bases = rowBases(budget);
  return Object.values(bases)
    .filter((b) => selected(b.id))
    .map((b) => notRun(b, reason, b.id === IDS.tap || b.id === IDS.quiet ? [MESH_FLOOR_TARGET] : []));
}

/** What one fleet gave: the four-message and quiet runs, the floor's runs in turn with them, and the stated-load runs. */
export interface FleetRuns {
  tap: Driven[];
  quiet: Driven[];
  bare: Driven[];
  stated: Driven[];
  /** What each warm-up took before the measured runs, by system (tap, quiet, floor). */
  warmed: Record<string, { tasks: number; ms: number }>;
}

/** The figure of some repetitions of `drive`: calls per second, with the P95 and the CPU of each side beside it. */
function figureOf(name: string, runs: Driven[]) {
  const cpu = sideCpuExtras(runs.map((r) => r.cpu));
  return { name, value: spread(runs.map((r) => r.rate)), extra: { p95_ms: spread(runs.map((r) => r.p95)), ...cpu } };
}

type Figured = ReturnType<typeof figureOf>;

/** The CPU a call cost every process it took (the medians of each side, in µs), when all were read. */
function allCpu(f: Figured): number | undefined {
  const sides = ['cpu_requester_us', 'cpu_agents_us', 'cpu_server_us'].map(
    (k) => (f.extra as Record<string, Spread | undefined>)[k]?.median,
  );
  return sides.every((v) => v !== undefined) ? sides.reduce((a, b) => a! + b!, 0) : undefined;
}

/** TAP's ratio to the floor in words: the ratio, its spread, the P95s, and what a call cost every process. */
function ofFloor(tap: Figured, floor: Figured, ratio: number): string {
  const p95s = tap.extra.p95_ms;
  const p95 = p95s.median;
  const [tapCpu, floorCpu] = [allCpu(tap), allCpu(floor)];
  const cpu =
    tapCpu !== undefined && floorCpu !== undefined
      ? `; CPU a task, every process together: ${Math.round(tapCpu)} µs, the floor's ${Math.round(floorCpu)} µs`
      : '';
  return `${ratio.toFixed(2)}× the floor (${ratioRange(tap.value, floor.value)}), P95 ${p95.toFixed(1)} ms (${p95s.max > p95s.min ? `${p95s.min.toFixed(1)}–${p95s.max.toFixed(1)} ms; ` : ''}floor's ${floor.extra.p95_ms.median.toFixed(1)} ms)${cpu}`;
}

/**
 * A throughput figure against the bare floor, and the issue's mesh targets judged on it (the
 * stated 400/s, judged on `stated`, the four-message row's runs at that offered load, and ten times
 * that, judged on the saturated figure, only for the four-message row); a fleet other than
 * 20 agents is measured, not judged.
 */
function judged(tap: Figured, floor: Figured, fleet: number, stated?: Driven[]) {
  const rate = tap.value.median;
  const p95 = tap.extra.p95_ms.median;
  const baseline = compare(tap, 'bare-nats', floor);
  const ratio = baseline.ratio ?? 0;
  const said = `${Math.round(rate)}/s, P95 ${p95.toFixed(1)} ms`;
  const targets = [
    ...(stated
      ? [
          statedTarget(stated),
          { text: 'ten times that, 4,000 messages/s, with P95 under 20 ms', at: rate >= 4000 && p95 < 20, measured: said },
        ]
      : []),
    { text: MESH_FLOOR_TARGET, at: ratio >= 0.5 && p95 < 20, measured: ofFloor(tap, floor, ratio) },
  ].map(({ text, at, measured }) =>
    fleet === 20 ? { text, measured, met: at } : { text, measured: `only ${fleet} agents in this mode`, met: null },
  );
  return { tap, baselines: [baseline], targets };
}

/** The stated target, judged on runs at its offered load of 400 tasks a second. */
function statedTarget(runs: Driven[]): { text: string; at: boolean; measured: string } {
  const rate = spread(runs.map((r) => r.rate));
  const p95 = spread(runs.map((r) => r.p95));
  return {
    text: `${STATED_RATE} messages/s with P95 under 80 ms (the stated target; ${STATED_RATE} tasks a second offered)`,
    at: rate.median >= STATED_RATE * 0.95 && p95.median < 80,
    measured: `${Math.round(rate.median)}/s, P95 ${p95.median.toFixed(1)} ms (${p95.min.toFixed(1)}–${p95.max.toFixed(1)} ms)`,
  };
}

/** What each warm-up took, as the details say it: "tap 26,000 tasks in 8 s; …". */
function warmUpDetails(runs: FleetRuns): string {
  return Object.entries(runs.warmed)
    .map(([k, w]) => `${k} ${w.tasks.toLocaleString('en-US')} tasks in ${Math.round(w.ms / 1000)} s`)
    .join('; ');
}

/** The floor's figure from the runs of a fleet of `fleet` agents. */
function floorOf(runs: FleetRuns, fleet: number): Figured {
  return figureOf(`bare NATS request/reply, ${fleet} responder processes (floor)`, runs.bare);
}

/** The rows of the fleet in one process per agent. */
export function perProcessRows(
  bases: Record<keyof typeof IDS, RowBase>,
  runs: FleetRuns,
  fleet: number,
  count: number,
  quiet: boolean,
): Row[] {
  const floor = floorOf(runs, fleet);
  const depthDetails = { tasks_per_repetition: count, in_flight: fleet * PER_AGENT, warm_up: warmUpDetails(runs) };
  const details = {
    ...depthDetails,
    stated_offered_per_s: STATED_RATE,
    stated_tasks: Math.min(count, STATED_RATE * 5),
    stated_p95_ms: Math.round(spread(runs.stated.map((r) => r.p95)).median * 10) / 10,
  };
  const tap = figureOf(`TAP Mesh (reference requester + ${fleet} agents)`, runs.tap);
  const rows: Row[] = [{ ...bases.tap, ...judged(tap, floor, fleet, runs.stated), details }];
  if (quiet) {
    const q = figureOf(`TAP Mesh, TAP 1.1 quiet tasks (reference requester + ${fleet} agents)`, runs.quiet);
    const judgedQuiet = judged(q, floor, fleet);
    rows.push({ ...bases.quiet, ...judgedQuiet, baselines: [...judgedQuiet.baselines, compare(q, 'tap', tap)], details: depthDetails });
  }
  return rows;
}

/** The rows of the fleet in HOSTS processes: ratios to the floor and to the per-process rows, no target. */
export function hostedRows(
  bases: Record<keyof typeof IDS, RowBase>,
  runs: FleetRuns,
  perProcess: Row[],
  fleet: number,
  count: number,
  quiet: boolean,
): Row[] {
  const floor = floorOf(runs, fleet);
  const details = { tasks_per_repetition: count, in_flight: fleet * PER_AGENT, processes: HOSTS, warm_up: warmUpDetails(runs) };
  const row = (base: RowBase, name: string, r: Driven[], beside: string): Row => {
    const tap = figureOf(name, r);
    const other = perProcess.find((p) => p.id === beside)?.tap;
    const baseline = compare(tap, 'bare-nats', floor);
    return {
      ...base,
      tap,
      baselines: [baseline, ...(other ? [compare(tap, beside, other)] : [])],
      targets: [],
      details: { ...details, of_floor: ofFloor(tap, floor, baseline.ratio ?? 0) },
    };
  };
  const rows = [row(bases.hosted, `TAP Mesh (reference requester + ${fleet} agents in ${HOSTS} processes)`, runs.tap, IDS.tap)];
  if (quiet)
    rows.push(
      row(
        bases.hostedQuiet,
        `TAP Mesh, TAP 1.1 quiet tasks (reference requester + ${fleet} agents in ${HOSTS} processes)`,
        runs.quiet,
        IDS.quiet,
      ),
    );
  return rows;
}
