/**
 * Scenario 8, the mesh: tasks through the Mesh requester to 20 agent processes (4 in the tiny run) with 5 in flight
 * each, as four-message tasks and as TAP 1.1 quiet tasks (request → result), against the target of 400 messages/s with P95 under 80 ms and against a bare NATS
 * request/reply floor to 20 responder processes in the same run; discovery among 100 registered
 * agents; and the time from an agent's death to its tasks running elsewhere (spec: mesh).
 * A message here is one task round trip: the task.request and its task.result.
 */
import { connect } from '@nats-io/transport-node';
import { spawnCompiled, spawnScript, type LineChild } from '../lib/children.ts';
import type { Budget } from '../lib/options.ts';
import { peer } from '../lib/paths.ts';
import { compare, missingBaseline, notRun, ratioRange, type Row } from '../lib/report.ts';
import { quantile, spread } from '../lib/stats.ts';
import { oneLine } from './roundtrip.ts';

const PER_AGENT = 5;
/**
 * Warm-up calls per agent process before the measured ones. Measured with 15 an agent (a warm-up
 * of 300 over 20 agents), the agents ran partly unoptimized code and compiled the rest on the
 * clock: 620 µs of agent CPU a task, against 435 µs after 1,000 an agent.
 */
const WARM_PER_AGENT = 1000;
const SCENARIO = '8. Mesh';
/** The issue's target for the mesh: a ratio to the bare floor measured in the same run, and a latency. */
const MESH_FLOOR_TARGET = '20 agent processes × 5 in flight at least 0.5× the bare NATS floor with 20 responders, P95 under 20 ms';

export function meshRowIds(): string[] {
  return ['mesh.throughput', 'mesh.throughput.quiet', 'mesh.discovery', 'mesh.failover'];
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

/** The offered load of the stated target: 400 tasks a second. */
const STATED_RATE = 400;

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

interface Driven {
  rate: number;
  p95: number;
}

/** The figure of some repetitions of `drive`: calls per second, with the P95 beside it. */
function figureOf(name: string, runs: Driven[]) {
  return { name, value: spread(runs.map((r) => r.rate)), extra: { p95_ms: spread(runs.map((r) => r.p95)) } };
}

/**
 * A throughput figure against the bare floor, and the issue's mesh targets judged on it (the
 * stated 400/s, judged on `stated`, the four-message row's runs at that offered load, and ten times
 * that, judged on the saturated figure, only for the four-message row); a fleet other than
 * 20 agents is measured, not judged.
 */
function judged(tap: ReturnType<typeof figureOf>, floor: ReturnType<typeof figureOf>, fleet: number, stated?: Driven[]) {
  const rate = tap.value.median;
  const p95 = tap.extra.p95_ms.median;
  const baseline = compare(tap, 'bare-nats', floor);
  const ratio = baseline.ratio ?? 0;
  const p95s = tap.extra.p95_ms;
  const ofFloor = `${ratio.toFixed(2)}× the floor (${ratioRange(tap.value, floor.value)}), P95 ${p95.toFixed(1)} ms (${p95s.max > p95s.min ? `${p95s.min.toFixed(1)}–${p95s.max.toFixed(1)} ms; ` : ''}floor's ${floor.extra.p95_ms.median.toFixed(1)} ms)`;
  const said = `${Math.round(rate)}/s, P95 ${p95.toFixed(1)} ms`;
  const targets = [
    ...(stated
      ? [
          statedTarget(stated),
          { text: 'ten times that, 4,000 messages/s, with P95 under 20 ms', at: rate >= 4000 && p95 < 20, measured: said },
        ]
      : []),
    { text: MESH_FLOOR_TARGET, at: ratio >= 0.5 && p95 < 20, measured: ofFloor },
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

async function startAll(children: LineChild[], what: string): Promise<void> {
  await Promise.all(children.map((c, i) => c.line((l) => l === 'ready', 120_000, `${what} ${i} starting`)));
}

export async function mesh(budget: Budget, selected: (id: string) => boolean, log: (line: string) => void): Promise<Row[]> {
  const { natsServerInstalled, startNatsServer } = await import('../../reference/transports/nats/nats-server.testkit.ts');
  // The stated target is for 20 agents; a smaller fleet (the tiny run) is measured but not judged.
  const fleet = budget.meshAgents;
  const base = (id: string, title: string, unit: string, better: 'higher' | 'lower', method: string) => ({
    id,
    scenario: SCENARIO,
    title,
    unit,
    better,
    method,
  });
  const throughputRow = base(
    'mesh.throughput',
    `${fleet} agent processes × ${PER_AGENT} tasks in flight through the mesh (tap.test.echo)`,
    'calls/s',
    'higher',
    `one Mesh requester, least-loaded routing over ${fleet} agent processes joined to the registry, ${fleet * PER_AGENT} tasks in flight, after a warm-up of ${(WARM_PER_AGENT * fleet).toLocaleString('en-US')} tasks (as many calls for the floor); a message is a round trip (task.request → task.result); floor: NATS request/reply to ${fleet} bare responder processes at the same depth; the stated target of ${STATED_RATE} messages/s with P95 under 80 ms is judged on a run that offers ${STATED_RATE} tasks a second whatever the earlier ones are doing (an open loop; at most 5 s a repetition), the others on the saturated figure; ${Math.min(budget.reps, 3)} repetitions on one fleet`,
  );
  const quietRow = base(
    'mesh.throughput.quiet',
    `${fleet} agent processes × ${PER_AGENT} TAP 1.1 quiet tasks in flight through the mesh (tap.test.echo)`,
    'calls/s',
    'higher',
    `as mesh.throughput, each task a TAP 1.1 quiet task (Mesh.task with quiet: true; two messages, as many as the floor's); the same fleet and floor, measured in turn with it`,
  );
  const discoveryRow = base(
    'mesh.discovery',
    '100 registered agents: discovery by capability',
    'ms',
    'lower',
    '100 entries written to the registry bucket; mesh.discover (answered from the watch) and a cold registry.list (reads the bucket)',
  );
  const failoverRow = base(
    'mesh.failover',
    'an agent process killed with 5 tasks: time until they run elsewhere',
    'ms',
    'lower',
    'SIGKILL of one agent process holding 5 tap.test.sleep tasks; time until every task was accepted by another agent (registry heartbeat 250 ms, lifetime 750 ms)',
  );
  if (!natsServerInstalled)
    return [throughputRow, quietRow, discoveryRow, failoverRow].map((r) =>
      notRun(r, 'nats-server is not installed', r === throughputRow || r === quietRow ? [MESH_FLOOR_TARGET] : []),
    );
  const server = await startNatsServer();
  const rows: Row[] = [];
  const { connectMesh } = await import('../../dist/reference/mesh/connect.js');
  try {
    if (selected('mesh.throughput') || selected('mesh.throughput.quiet')) {
      const hosts: LineChild[] = [];
      const bare: LineChild[] = [];
      try {
        log(`mesh: starting ${fleet} agent processes and ${fleet} bare responders`);
        for (let i = 0; i < fleet; i++) {
          hosts.push(
            spawnCompiled('reference/mesh/agent-host.ts', [
              '--nats',
              server.url,
              '--ids',
              `bench.mesh-${i}`,
              '--max-concurrent-tasks',
              '16',
              '--heartbeat-ms',
              '500',
              '--ttl-ms',
              '3000',
            ]),
          );
          bare.push(spawnScript(peer('nats-echo.ts'), [server.url, `bench.echo.${i}`]));
        }
        await startAll(hosts, 'agent');
        await startAll(bare, 'responder');
        const m = await connectMesh(server.url, { agentId: 'bench.mesh-requester' });
        const nc = await connect({ servers: server.url.replace(/^nats:\/\//, '') });
        try {
          while ((await m.discover({ capability: 'tap.test.echo' })).length < fleet) await new Promise((r) => setTimeout(r, 50));
          const callOf = (quiet: boolean) => async (): Promise<void> => {
            const r = await (await m.task('tap.test.echo', { n: 1 }, quiet ? { quiet: true } : {})).result;
            if (r.status !== 'completed') throw new Error(`a task ended ${r.status}`);
          };
          const call = callOf(false);
          const quietCall = callOf(true);
          let k = 0;
          const body = new TextEncoder().encode(JSON.stringify({ n: 1 }));
          const bareCall = () => nc.request(`bench.echo.${k++ % fleet}`, body, { timeout: 10_000 });
          const count = Math.max(500, Math.min(budget.inflightCalls, 4000));
          const wantQuiet = selected('mesh.throughput.quiet');
          // Every process is warmed up as one agent of the round-trip rows is (its JIT, its tables):
          // 1,000 tasks an agent, and as many calls for the floor's responders.
          const warm = WARM_PER_AGENT * fleet;
          await drive(call, warm, fleet * PER_AGENT);
          if (wantQuiet) await drive(quietCall, warm, fleet * PER_AGENT);
          await drive(bareCall, warm, fleet * PER_AGENT);
          const runs = { tap: [] as Driven[], quiet: [] as Driven[], bare: [] as Driven[], stated: [] as Driven[] };
          const statedCount = Math.min(count, STATED_RATE * 5);
          for (let rep = 0; rep < Math.min(budget.reps, 3); rep++) {
            runs.tap.push(await drive(call, count, fleet * PER_AGENT));
            if (wantQuiet) runs.quiet.push(await drive(quietCall, count, fleet * PER_AGENT));
            runs.bare.push(await drive(bareCall, count, fleet * PER_AGENT));
            runs.stated.push(await paced(call, statedCount, STATED_RATE));
            const said = (name: string, d: Driven | undefined) => (d ? `${name} ${Math.round(d.rate)}/s p95 ${d.p95.toFixed(1)} ms` : '');
            log(
              `  repetition ${rep + 1}: ${[said('mesh', runs.tap.at(-1)), said('quiet', runs.quiet.at(-1)), said('bare NATS', runs.bare.at(-1)), said(`mesh at ${STATED_RATE}/s offered`, runs.stated.at(-1))].filter(Boolean).join('; ')}`,
            );
          }
          const floor = figureOf(`bare NATS request/reply, ${fleet} responder processes (floor)`, runs.bare);
          const depthDetails = { tasks_per_repetition: count, in_flight: fleet * PER_AGENT };
          const details = {
            ...depthDetails,
            stated_offered_per_s: STATED_RATE,
            stated_tasks: statedCount,
            stated_p95_ms: Math.round(spread(runs.stated.map((r) => r.p95)).median * 10) / 10,
          };
          const tap = figureOf(`TAP Mesh (reference requester + ${fleet} agents)`, runs.tap);
          rows.push({ ...throughputRow, ...judged(tap, floor, fleet, runs.stated), details });
          if (wantQuiet) {
            const quiet = figureOf(`TAP Mesh, TAP 1.1 quiet tasks (reference requester + ${fleet} agents)`, runs.quiet);
            const judgedQuiet = judged(quiet, floor, fleet);
            rows.push({
              ...quietRow,
              ...judgedQuiet,
              baselines: [...judgedQuiet.baselines, compare(quiet, 'tap', tap)],
              details: depthDetails,
            });
          }
        } finally {
          await m.close();
          await nc.close();
        }
      } catch (err) {
        rows.push(notRun(throughputRow, oneLine(err), [MESH_FLOOR_TARGET]));
        if (selected('mesh.throughput.quiet')) rows.push(notRun(quietRow, oneLine(err), [MESH_FLOOR_TARGET]));
      } finally {
        await Promise.all([...hosts, ...bare].map((c) => c.stop(3000)));
      }
    }
    if (selected('mesh.discovery')) {
      try {
        const { openRegistry } = await import('../../dist/reference/mesh/registry.js');
        const { hostCard } = await import('../../dist/reference/mesh/agent-host.js');
        const nc = await connect({ servers: server.url.replace(/^nats:\/\//, '') });
        const registry = await openRegistry(nc);
        const now = new Date().toISOString();
        for (let i = 0; i < 100; i++) {
          const card = hostCard(`bench.listed-${i}`);
          card.capabilities = [
            {
              name: `bench.cap-${i % 10}`,
              version: '1.0.0',
              description: 'listed',
              input_formats: ['json'],
              output_formats: ['json'],
              streaming: false,
              side_effects: false,
            },
          ];
          await registry.create({
            agent_id: card.agent_id,
            instance: `i${i}`,
            card,
            versions: ['1.0'],
            endpoints: [{ binding: 'nats', url: `${server.url}/${card.agent_id}` }],
            load: { running_tasks: 0, max_concurrent_tasks: 16 },
            heartbeat_ms: 20_000,
            ttl_ms: 60_000,
            started_at: now,
            updated_at: now,
          });
        }
        const m = await connectMesh(server.url, { agentId: 'bench.mesh-discoverer' });
        const warm: number[] = [];
        const cold: number[] = [];
        for (let rep = 0; rep < 20; rep++) {
          let t = performance.now();
          const found = await m.discover({ capability: `bench.cap-${rep % 10}`, version: '^1' });
          warm.push(performance.now() - t);
          if (found.length !== 10) throw new Error(`discovery found ${found.length} agents, not 10`);
          t = performance.now();
          await registry.list({ capability: `bench.cap-${rep % 10}` });
          cold.push(performance.now() - t);
        }
        await m.close();
        await nc.close();
        const tap = { name: 'mesh.discover (from the watch)', value: spread(warm) };
        rows.push({
          ...discoveryRow,
          tap,
          baselines: [compare(tap, 'cold-list', { name: 'registry.list, reading the bucket', value: spread(cold) })],
          targets: [],
        });
      } catch (err) {
        rows.push(notRun(discoveryRow, oneLine(err)));
      }
    }
    if (selected('mesh.failover')) {
      const hosts: LineChild[] = [];
      try {
        for (let i = 0; i < 2; i++)
          hosts.push(
            spawnCompiled('reference/mesh/agent-host.ts', [
              '--nats',
              server.url,
              '--ids',
              `bench.fo-${i}`,
              '--heartbeat-ms',
              '250',
              '--ttl-ms',
              '750',
            ]),
          );
        await startAll(hosts, 'agent');
        const m = await connectMesh(server.url, { agentId: 'bench.mesh-failover' });
        const runs: number[] = [];
        try {
          while ((await m.discover({ capability: 'tap.test.sleep' })).length < 2) await new Promise((r) => setTimeout(r, 50));
          const tasks = await Promise.all(
            Array.from({ length: 5 }, () => m.task('tap.test.sleep', { ms: 2000 }, { route: 'round-robin' })),
          );
          await Promise.all(tasks.map((t) => t.accepted));
          // Kill the process that holds the first task; time until each of its tasks is accepted elsewhere.
          const victim = tasks[0]!.agentId!;
          const mine = tasks.filter((t) => t.agentId === victim);
          const index = victim === 'bench.fo-0' ? 0 : 1;
          const t0 = performance.now();
          hosts[index]!.child.kill('SIGKILL');
          await Promise.all(
            mine.map(async (t) => {
              for (;;) {
                const last = t.hops[t.hops.length - 1]!;
                if (last.agentId !== victim && t.state !== 'requested') break;
                await new Promise((r) => setTimeout(r, 5));
              }
              runs.push(performance.now() - t0);
            }),
          );
          await Promise.all(tasks.map((t) => t.result.catch(() => undefined)));
        } finally {
          await m.close();
        }
        const tap = { name: 'TAP Mesh, heartbeat 250 ms, lifetime 750 ms', value: spread(runs) };
        rows.push({
          ...failoverRow,
          tap,
          baselines: [missingBaseline('none', 'no baseline', 'a time to recover has no bare equivalent')],
          targets: [],
        });
      } catch (err) {
        rows.push(notRun(failoverRow, oneLine(err)));
      } finally {
        await Promise.all(hosts.map((c) => c.stop(3000)));
      }
    }
  } finally {
    await server.stop();
  }
  return rows;
}
