/**
 * The throughput rows of scenario 8: tasks through the Mesh requester to a fleet of agents with 5
 * in flight each, as four-message tasks and as TAP 1.1 quiet tasks, against a bare NATS
 * request/reply floor to as many responder processes in the same run. The fleet runs twice: one
 * agent process per agent, as the issue's target has it, and the same agents served by two
 * processes (`--ids`), as an operator with fewer cores than agents would run them (spec: mesh).
 * A message here is one task round trip: the task.request and its task.result.
 */
import { connect } from '@nats-io/transport-node';
import type { Mesh } from '../../dist/reference/mesh/index.js';
import { spawnCompiled, spawnScript, started, type LineChild } from '../lib/children.ts';
import type { Budget } from '../lib/options.ts';
import { peer } from '../lib/paths.ts';
import { compare, notRun, ratioRange, type Row } from '../lib/report.ts';
import { quantile, spread } from '../lib/stats.ts';
import { oneLine } from './roundtrip.ts';

export const SCENARIO = '8. Mesh';
const PER_AGENT = 5;
/** Tasks each agent may keep: more than any run sends one agent (the default of 4,096 per principal would answer BUSY). */
const KEPT = 1 << 20;
/** The processes that serve the whole fleet in the hosted rows. */
const HOSTS = 2;
/** The issue's target for the mesh: a ratio to the bare floor measured in the same run, and a latency. */
export const MESH_FLOOR_TARGET = '20 agent processes × 5 in flight at least 0.5× the bare NATS floor with 20 responders, P95 under 20 ms';
/** The offered load of the stated target: 400 tasks a second. */
const STATED_RATE = 400;

const IDS = {
  tap: 'mesh.throughput',
  quiet: 'mesh.throughput.quiet',
  hosted: 'mesh.throughput.hosted',
  hostedQuiet: 'mesh.throughput.hosted.quiet',
} as const;

export const THROUGHPUT_ROW_IDS: readonly string[] = Object.values(IDS);

type RowBase = Omit<Row, 'tap' | 'baselines' | 'targets' | 'not_run'>;

interface Driven {
  rate: number;
  p95: number;
}

/** Runs `call` with `depth` in flight until `count` calls ended; calls per second and P95 in ms. */
async function drive(call: () => Promise<unknown>, count: number, depth: number): Promise<Driven> {
  const latencies: number[] = [];
  let started = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: depth }, async () => {
      while (started < count) {
        started++;
        const t = performance.now();
        await call();
        latencies.push(performance.now() - t);
      }
    }),
  );
  return driven(count, t0, latencies);
}

/** What `count` calls started at `t0` gave: calls per second until now, and the P95 of their latencies in ms. */
function driven(count: number, t0: number, latencies: number[]): Driven {
  return {
    rate: count / ((performance.now() - t0) / 1000),
    p95: quantile(
      latencies.sort((a, b) => a - b),
      0.95,
    ),
  };
}

/**
 * Starts `count` calls at `perSecond`, whatever the earlier ones are doing (an open loop, as
 * requesters arrive), and waits for all of them: the rate they ended at and their P95 in ms.
 */
async function paced(call: () => Promise<unknown>, count: number, perSecond: number): Promise<Driven> {
  const latencies: number[] = [];
  const calls: Promise<void>[] = [];
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const due = t0 + (i * 1000) / perSecond;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const t = performance.now();
    calls.push(call().then(() => void latencies.push(performance.now() - t)));
  }
  await Promise.all(calls);
  return driven(count, t0, latencies);
}

/** The figure of some repetitions of `drive`: calls per second, with the P95 beside it. */
function figureOf(name: string, runs: Driven[]) {
  return { name, value: spread(runs.map((r) => r.rate)), extra: { p95_ms: spread(runs.map((r) => r.p95)) } };
}

type Figured = ReturnType<typeof figureOf>;

/** TAP's ratio to the floor in words: the ratio, its spread and the P95s. */
function ofFloor(tap: Figured, floor: Figured, ratio: number): string {
  const p95s = tap.extra.p95_ms;
  const p95 = p95s.median;
  return `${ratio.toFixed(2)}× the floor (${ratioRange(tap.value, floor.value)}), P95 ${p95.toFixed(1)} ms (${p95s.max > p95s.min ? `${p95s.min.toFixed(1)}–${p95s.max.toFixed(1)} ms; ` : ''}floor's ${floor.extra.p95_ms.median.toFixed(1)} ms)`;
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

/** How long a fleet of agent processes may take to start on two cores. */
export const FLEET_START_MS = 120_000;

/** The rows' descriptions for a budget's fleet, warm-up and repetitions. */
function rowBases(budget: Budget): Record<keyof typeof IDS, RowBase> {
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
  const perProcess = `one Mesh requester, least-loaded routing over ${fleet} agent processes joined to the registry, ${fleet * PER_AGENT} tasks in flight, after a warm-up of ${(budget.meshWarmPerAgent * fleet).toLocaleString('en-US')} tasks (as many calls for the floor); a message is a round trip (task.request → task.result); floor: NATS request/reply to ${fleet} bare responder processes at the same depth; the stated target of ${STATED_RATE} messages/s with P95 under 80 ms is judged on a run that offers ${STATED_RATE} tasks a second whatever the earlier ones are doing (an open loop; at most 5 s a repetition), the others on the saturated figure; ${reps} repetitions on one fleet`;
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
interface FleetRuns {
  tap: Driven[];
  quiet: Driven[];
  bare: Driven[];
  stated: Driven[];
}

/**
 * Starts agent-host processes serving `groups` (one process per group of agent ids), measures
 * the mesh in turn with the floor, and stops them.
 */
async function measureFleet(
  url: string,
  groups: string[][],
  bareCall: () => Promise<unknown>,
  o: { reps: number; count: number; warmPerAgent: number; quiet: boolean; stated: boolean; label: string; log: (line: string) => void },
): Promise<FleetRuns> {
  const { connectMesh } = await import('../../dist/reference/mesh/connect.js');
  const fleet = groups.flat().length;
  const hosts = groups.map((ids) =>
    spawnCompiled('reference/mesh/agent-host.ts', [
      '--nats',
      url,
      '--ids',
      ids.join(','),
      '--max-concurrent-tasks',
      '16',
      '--heartbeat-ms',
      '500',
      '--ttl-ms',
      '3000',
      // Every finished task is kept for the resume window: room for all a run sends, as the round-trip rows' agents have.
      '--max-tasks-kept',
      String(KEPT),
    ]),
  );
  let m: Mesh | undefined;
  try {
    await started(hosts, 'agent host', FLEET_START_MS);
    m = await connectMesh(url, { agentId: 'bench.mesh-requester' });
    const mesh = m;
    while ((await mesh.discover({ capability: 'tap.test.echo' })).length < fleet) await new Promise((r) => setTimeout(r, 50));
    const callOf = (quiet: boolean) => async (): Promise<void> => {
      const r = await (await mesh.task('tap.test.echo', { n: 1 }, quiet ? { quiet: true } : {})).result;
      if (r.status !== 'completed') throw new Error(`a task ended ${r.status}`);
    };
    const call = callOf(false);
    const quietCall = callOf(true);
    const depth = fleet * PER_AGENT;
    // Every process is warmed up as one agent of the round-trip rows is (its JIT, its tables):
    // 1,000 tasks an agent in a full run, and as many calls for the floor's responders.
    const warm = o.warmPerAgent * fleet;
    await drive(call, warm, depth);
    if (o.quiet) await drive(quietCall, warm, depth);
    await drive(bareCall, warm, depth);
    const runs: FleetRuns = { tap: [], quiet: [], bare: [], stated: [] };
    const statedCount = Math.min(o.count, STATED_RATE * 5);
    for (let rep = 0; rep < o.reps; rep++) {
      runs.tap.push(await drive(call, o.count, depth));
      if (o.quiet) runs.quiet.push(await drive(quietCall, o.count, depth));
      runs.bare.push(await drive(bareCall, o.count, depth));
      if (o.stated) runs.stated.push(await paced(call, statedCount, STATED_RATE));
      const said = (name: string, d: Driven | undefined) => (d ? `${name} ${Math.round(d.rate)}/s p95 ${d.p95.toFixed(1)} ms` : '');
      o.log(
        `  ${o.label}, repetition ${rep + 1}: ${[said('mesh', runs.tap.at(-1)), said('quiet', runs.quiet.at(-1)), said('bare NATS', runs.bare.at(-1)), said(`mesh at ${STATED_RATE}/s offered`, runs.stated.at(-1))].filter(Boolean).join('; ')}`,
      );
    }
    return runs;
  } finally {
    await m?.close();
    await Promise.all(hosts.map((c) => c.stop(3000)));
  }
}

/** The floor's figure from the runs of a fleet of `fleet` agents. */
function floorOf(runs: FleetRuns, fleet: number): Figured {
  return figureOf(`bare NATS request/reply, ${fleet} responder processes (floor)`, runs.bare);
}

/** The rows of the fleet in one process per agent. */
function perProcessRows(bases: Record<keyof typeof IDS, RowBase>, runs: FleetRuns, fleet: number, count: number, quiet: boolean): Row[] {
  const floor = floorOf(runs, fleet);
  const depthDetails = { tasks_per_repetition: count, in_flight: fleet * PER_AGENT };
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
function hostedRows(
  bases: Record<keyof typeof IDS, RowBase>,
  runs: FleetRuns,
  perProcess: Row[],
  fleet: number,
  count: number,
  quiet: boolean,
): Row[] {
  const floor = floorOf(runs, fleet);
  const details = { tasks_per_repetition: count, in_flight: fleet * PER_AGENT, processes: HOSTS };
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

/** The selected throughput rows, on the nats-server at `url`. */
export async function meshThroughput(
  budget: Budget,
  selected: (id: string) => boolean,
  log: (line: string) => void,
  url: string,
): Promise<Row[]> {
  const fleet = budget.meshAgents;
  const reps = Math.min(budget.reps, 3);
  const bases = rowBases(budget);
  const wantProcesses = selected(IDS.tap) || selected(IDS.quiet);
  const wantHosted = selected(IDS.hosted) || selected(IDS.hostedQuiet);
  if (!wantProcesses && !wantHosted) return [];
  const count = Math.max(500, Math.min(budget.inflightCalls, 4000));
  const ids = Array.from({ length: fleet }, (_, i) => `bench.mesh-${i}`);
  const bare: LineChild[] = [];
  const rows: Row[] = [];
  const nc = await connect({ servers: url.replace(/^nats:\/\//, '') });
  try {
    log(`mesh: starting ${fleet} bare responders`);
    for (let i = 0; i < fleet; i++) bare.push(spawnScript(peer('nats-echo.ts'), [url, `bench.echo.${i}`]));
    await started(bare, 'responder', FLEET_START_MS);
    let k = 0;
    const body = new TextEncoder().encode(JSON.stringify({ n: 1 }));
    const bareCall = () => nc.request(`bench.echo.${k++ % fleet}`, body, { timeout: 10_000 });
    if (wantProcesses) {
      log(`mesh: ${fleet} agent processes`);
      const quiet = selected(IDS.quiet);
      const runs = await measureFleet(
        url,
        ids.map((id) => [id]),
        bareCall,
        { reps, count, warmPerAgent: budget.meshWarmPerAgent, quiet, stated: true, label: `${fleet} processes`, log },
      );
      rows.push(...perProcessRows(bases, runs, fleet, count, quiet));
    }
    if (wantHosted) {
      log(`mesh: the same ${fleet} agents in ${HOSTS} processes`);
      const per = Math.ceil(fleet / HOSTS);
      const groups = Array.from({ length: HOSTS }, (_, h) => ids.slice(h * per, (h + 1) * per));
      const quiet = selected(IDS.hostedQuiet);
      const runs = await measureFleet(url, groups, bareCall, {
        reps,
        count,
        warmPerAgent: budget.meshWarmPerAgent,
        quiet,
        stated: false,
        label: `${HOSTS} processes`,
        log,
      });
      rows.push(...hostedRows(bases, runs, rows, fleet, count, quiet));
    }
  } catch (err) {
    const done = new Set(rows.map((r) => r.id));
    rows.push(...throughputNotRun(budget, (id) => selected(id) && !done.has(id), oneLine(err)));
  } finally {
    await nc.close();
    await Promise.all(bare.map((c) => c.stop(3000)));
  }
  return rows;
}
