/**
 * Scenario 8, the mesh: the throughput rows (mesh-throughput.ts: 20 agents, 4 in the tiny run,
 * with 5 in flight each, against the stated 400 messages/s and a bare NATS floor); discovery
 * among 100 registered agents; and the time from an agent's death to its tasks running
 * elsewhere (spec: mesh).
 */
import { connect } from '@nats-io/transport-node';
import { spawnCompiled, started, type LineChild } from '../lib/children.ts';
import type { Budget } from '../lib/options.ts';
import { compare, missingBaseline, notRun, type Row } from '../lib/report.ts';
import { spread } from '../lib/stats.ts';
import { SCENARIO, THROUGHPUT_ROW_IDS, throughputNotRun } from './mesh-rows.ts';
import { FLEET_START_MS, meshThroughput } from './mesh-throughput.ts';
import { oneLine } from './roundtrip.ts';

export function meshRowIds(): string[] {
  return [...THROUGHPUT_ROW_IDS, 'mesh.discovery', 'mesh.failover'];
}

export async function mesh(budget: Budget, selected: (id: string) => boolean, log: (line: string) => void): Promise<Row[]> {
  const { natsServerInstalled, startNatsServer } = await import('../../reference/transports/nats/nats-server.testkit.ts');
  const base = (id: string, title: string, unit: string, better: 'higher' | 'lower', method: string) => ({
    id,
    scenario: SCENARIO,
    title,
    unit,
    better,
    method,
  });
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
    return [
      ...throughputNotRun(budget, selected, 'nats-server is not installed'),
      ...[discoveryRow, failoverRow].map((r) => notRun(r, 'nats-server is not installed')),
    ];
  const server = await startNatsServer();
  const rows: Row[] = [];
  const { connectMesh } = await import('../../dist/reference/mesh/connect.js');
  try {
    rows.push(...(await meshThroughput(budget, selected, log, server.url, server.pid)));
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
        await started(hosts, 'agent', FLEET_START_MS);
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
