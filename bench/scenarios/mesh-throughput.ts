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
import { DEFAULT_HEARTBEAT_MS } from '../../dist/reference/mesh/member.js';
import { spawnCompiled, spawnScript, started, type LineChild } from '../lib/children.ts';
import type { Budget } from '../lib/options.ts';
import { peer } from '../lib/paths.ts';
import { cpuPerCall } from '../lib/cpu.ts';
import type { Row } from '../lib/report.ts';
import { quantile } from '../lib/stats.ts';
import {
  hostedRows,
  HOSTS,
  IDS,
  PER_AGENT,
  perProcessRows,
  rowBases,
  STATED_RATE,
  throughputNotRun,
  type Driven,
  type FleetRuns,
} from './mesh-rows.ts';
import { oneLine } from './roundtrip.ts';

/** Tasks each agent may keep: more than any run sends one agent (the default of 4,096 per principal would answer BUSY). */
const KEPT = 1 << 20;
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

/** What a warm-up took: tasks and milliseconds. */
export interface Warmed {
  tasks: number;
  ms: number;
}

/** A window of the warm-up: tasks per agent in flight slot, about 5 s of a fleet of 20 on two cores, long enough for its noise to stay under the 5 % asked. */
const SETTLE_WINDOW_PER_SLOT = 200;
/** A window that beats the best one before it by less than this has not moved the rate. */
const SETTLE_GAIN = 1.05;
/**
 * Warms a fleet up until its rate settles: `least` calls, then windows of calls until two windows
 * in a row beat the best window before them by less than 5 % (or `maxMs` passed). A process of a
 * fleet of 20 on two cores takes a few thousand tasks to have its hot code optimized, and a warm-up
 * of a fixed count measured part of that climb. `run` drives the calls (the tests give their own).
 */
export async function settle(
  call: () => Promise<unknown>,
  least: number,
  depth: number,
  maxMs: number,
  run: (call: () => Promise<unknown>, count: number, depth: number) => Promise<{ rate: number }> = drive,
): Promise<Warmed> {
  const t0 = performance.now();
  await run(call, least, depth);
  const window = depth * SETTLE_WINDOW_PER_SLOT;
  let tasks = least;
  let best = 0;
  let still = 0;
  while (still < 2 && performance.now() - t0 < maxMs) {
    const { rate } = await run(call, window, depth);
    tasks += window;
    still = rate > best * SETTLE_GAIN ? 0 : still + 1;
    best = Math.max(best, rate);
  }
  return { tasks, ms: performance.now() - t0 };
}

/** The process ids of started children. */
function pidsOf(children: readonly LineChild[]): number[] {
  return children.flatMap((c) => (c.child.pid === undefined ? [] : [c.child.pid]));
}

/** The processes whose CPU a measured loop reads: those that answer the calls, and nats-server. */
interface Answering {
  agents: readonly number[];
  server: readonly number[];
}

/** `drive`, with the CPU each side spent per call. */
async function measured(call: () => Promise<unknown>, count: number, depth: number, by: Answering): Promise<Driven> {
  const { result, requester, groups } = await cpuPerCall({ agents: by.agents, server: by.server }, count, () => drive(call, count, depth));
  return { ...result, cpu: { requester, agents: groups.agents, server: groups.server } };
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

/** The agents' registry heartbeat: the default of joinMesh and of tap serve --mesh. */
const HEARTBEAT_MS = DEFAULT_HEARTBEAT_MS;
/** How long a fleet of agent processes may take to start on two cores. */
export const FLEET_START_MS = 120_000;

/**
 * Starts agent-host processes serving `groups` (one process per group of agent ids), measures
 * the mesh in turn with the floor, and stops them.
 */
async function measureFleet(
  url: string,
  groups: string[][],
  floor: { call: () => Promise<unknown>; pids: readonly number[] },
  o: {
    reps: number;
    count: number;
    warmPerAgent: number;
    /** How long each warm-up may go on past warmPerAgent while the rate still climbs. */
    settleMs: number;
    quiet: boolean;
    stated: boolean;
    label: string;
    log: (line: string) => void;
    /** nats-server's process, when known: its CPU per call is read too. */
    server: readonly number[];
  },
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
      // The registry timing an agent gets by default (tap serve --mesh, joinMesh): a heartbeat of 5 s,
      // so a changed load is written at most every 500 ms (TAP-REG-020), and a lifetime of three heartbeats.
      '--heartbeat-ms',
      String(HEARTBEAT_MS),
      '--ttl-ms',
      String(3 * HEARTBEAT_MS),
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
    // Every process is warmed up until its rate settles (its JIT, its tables): at least 1,000 tasks an
    // agent in a full run, and as many calls for the floor's responders.
    const warm = o.warmPerAgent * fleet;
    const warmed: Record<string, Warmed> = { tap: await settle(call, warm, depth, o.settleMs) };
    if (o.quiet) warmed.quiet = await settle(quietCall, warm, depth, o.settleMs);
    warmed.floor = await settle(floor.call, warm, depth, o.settleMs);
    o.log(
      `  ${o.label}, warmed up: ${Object.entries(warmed)
        .map(([k, w]) => `${k} ${w.tasks} tasks in ${Math.round(w.ms / 1000)} s`)
        .join('; ')}`,
    );
    const runs: FleetRuns = { tap: [], quiet: [], bare: [], stated: [], warmed };
    const statedCount = Math.min(o.count, STATED_RATE * 5);
    const agents = { agents: pidsOf(hosts), server: o.server };
    for (let rep = 0; rep < o.reps; rep++) {
      runs.tap.push(await measured(call, o.count, depth, agents));
      if (o.quiet) runs.quiet.push(await measured(quietCall, o.count, depth, agents));
      runs.bare.push(await measured(floor.call, o.count, depth, { agents: floor.pids, server: o.server }));
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

/** The selected throughput rows, on the nats-server at `url`. */
export async function meshThroughput(
  budget: Budget,
  selected: (id: string) => boolean,
  log: (line: string) => void,
  url: string,
  serverPid?: number,
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
    const floor = { call: bareCall, pids: pidsOf(bare) };
    const server = serverPid === undefined ? [] : [serverPid];
    if (wantProcesses) {
      log(`mesh: ${fleet} agent processes`);
      const quiet = selected(IDS.quiet);
      const runs = await measureFleet(
        url,
        ids.map((id) => [id]),
        floor,
        {
          reps,
          count,
          warmPerAgent: budget.meshWarmPerAgent,
          settleMs: budget.meshSettleMs,
          quiet,
          stated: true,
          label: `${fleet} processes`,
          log,
          server,
        },
      );
      rows.push(...perProcessRows(bases, runs, fleet, count, quiet));
    }
    if (wantHosted) {
      log(`mesh: the same ${fleet} agents in ${HOSTS} processes`);
      const per = Math.ceil(fleet / HOSTS);
      const groups = Array.from({ length: HOSTS }, (_, h) => ids.slice(h * per, (h + 1) * per));
      const quiet = selected(IDS.hostedQuiet);
      const runs = await measureFleet(url, groups, floor, {
        reps,
        count,
        warmPerAgent: budget.meshWarmPerAgent,
        settleMs: budget.meshSettleMs,
        quiet,
        stated: false,
        label: `${HOSTS} processes`,
        log,
        server,
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
