/**
 * Scenario 9, the registry at scale (spec: registry): 1,000 agents (fewer in the quick and tiny
 * runs) join one registry bucket through the reference membership, each writing, renewing and
 * withdrawing its own entry as a real agent does; a requester's watch reports each join. The
 * agents are simulated only in that they share a few NATS connections and run no agent runtime:
 * their entries name endpoints nobody listens on. Two rows: how long a join takes to reach the
 * watch (p50, p99), against a bare key-value put seen by a bare watch; and what heartbeats cost
 * per agent (bytes and messages per second), measured on the members' connections.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import type { Budget } from '../lib/options.ts';
import { compare, missingBaseline, notRun, type Row } from '../lib/report.ts';
import { percentiles, spread } from '../lib/stats.ts';

const SCENARIO = '9. Registry';
/** Agents join this many at a time: a steady stream of joins, not one burst. */
const JOINING_AT_ONCE = 20;
/** The members share this many connections. */
const CONNECTIONS = 4;
/** Discovery queries timed against the Mesh's watch once every agent has joined. */
const DISCOVERIES = 200;
const DISCOVERY_TARGET = (agents: number) => `${agents.toLocaleString('en-US')} registered agents: discovery under 1 ms from the watch`;
const HEARTBEAT_TARGET = (agents: number) => `${agents.toLocaleString('en-US')} registered agents: heartbeat traffic stated per agent`;

export function registryRowIds(): string[] {
  return ['registry.discovery', 'registry.heartbeats'];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Runs `one(i)` for i in 0..n-1, `depth` at a time. */
async function pool(n: number, depth: number, one: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: depth }, async () => {
      for (let i = next++; i < n; i = next++) await one(i);
    }),
  );
}

/** Message counts and bytes of some connections, as their clients count them (payloads and headers). */
function traffic(conns: NatsConnection[]): { msgs: number; bytes: number } {
  let msgs = 0;
  let bytes = 0;
  for (const nc of conns) {
    const s = nc.stats();
    msgs += s.inMsgs + s.outMsgs;
    bytes += s.inBytes + s.outBytes;
  }
  return { msgs, bytes };
}

export async function registry(budget: Budget, selected: (id: string) => boolean, log: (line: string) => void): Promise<Row[]> {
  const { natsServerInstalled, startNatsServer } = await import('../../reference/transports/nats/nats-server.testkit.ts');
  const agents = budget.registryAgents;
  const heartbeatMs = budget.registryHeartbeatMs;
  const windowMs = budget.registryWindowMs;
  const discoveryRow = {
    id: 'registry.discovery',
    scenario: SCENARIO,
    title: `${agents} agents join the registry: time until a requester's watch reports each`,
    unit: 'ms',
    better: 'lower' as const,
    method: `${agents} memberships (reference/mesh/member.ts joinRegistry) over ${CONNECTIONS} NATS connections, ${JOINING_AT_ONCE} joining at a time; from the call that writes an entry to its "joined" in registry.watch on another connection; the figure is the p50 of the joins, p99 beside it; then, all joined, ${DISCOVERIES} mesh.discover queries by capability (a Mesh of its own, answered from its watch), p50 and p99 beside. Floor: a bare key-value create of the same entry text, seen by a bare watch of the bucket`,
  };
  const heartbeatRow = {
    id: 'registry.heartbeats',
    scenario: SCENARIO,
    title: `heartbeat traffic per agent with ${agents} agents (heartbeat ${heartbeatMs / 1000} s)`,
    unit: 'bytes/s',
    better: 'lower' as const,
    method: `the ${agents} joined memberships renew their entries for ${windowMs / 1000} s; bytes (payloads and headers, as the NATS client counts them; protocol lines and subjects not counted) and messages (each renewal is a JetStream publish and its acknowledgement) on the members' connections, divided by agents and seconds. The watcher's inbound traffic is under Details`,
  };
  const targetsOf = (r: { id: string }): string[] => [r.id === 'registry.discovery' ? DISCOVERY_TARGET(1000) : HEARTBEAT_TARGET(1000)];
  if (!natsServerInstalled) return [discoveryRow, heartbeatRow].map((r) => notRun(r, 'nats-server is not installed', targetsOf(r)));
  const server = await startNatsServer();
  const conns: NatsConnection[] = [];
  const rows: Row[] = [];
  try {
    const { openRegistry } = await import('../../dist/reference/mesh/registry.js');
    const { joinRegistry } = await import('../../dist/reference/mesh/member.js');
    const { hostCard } = await import('../../dist/reference/mesh/agent-host.js');
    const open = async (): Promise<NatsConnection> => {
      const nc = await connect({ servers: server.url.replace(/^nats:\/\//, '') });
      conns.push(nc);
      return nc;
    };
    const members = await Promise.all(Array.from({ length: CONNECTIONS }, async () => openRegistry(await open())));
    const watcherNc = await open();
    const watcher = await openRegistry(watcherNc);
    const seenAt = new Map<string, number>();
    const watch = await watcher.watch((change) => {
      if (change.kind === 'joined') seenAt.set(change.agentId, performance.now());
    });
    await watch.ready;
    const cardOf = (id: string) => {
      const card = hostCard(id);
      card.capabilities = [
        {
          name: `bench.cap-${id.length % 10}`,
          version: '1.0.0',
          description: 'a capability of a simulated agent',
          input_formats: ['json'],
          output_formats: ['json'],
          streaming: false,
          side_effects: false,
        },
      ];
      return card;
    };

    log(`registry: ${agents} agents joining, ${JOINING_AT_ONCE} at a time`);
    const sentAt = new Map<string, number>();
    const memberships: Array<Awaited<ReturnType<typeof joinRegistry>>> = [];
    const t0 = performance.now();
    await pool(agents, JOINING_AT_ONCE, async (i) => {
      const id = `bench.reg-${i}`;
      sentAt.set(id, performance.now());
      memberships.push(
        await joinRegistry(
          members[i % CONNECTIONS]!,
          { heartbeatMs, ttlMs: 3 * heartbeatMs },
          {
            card: cardOf(id),
            versions: ['1.0'],
            endpoints: () => [{ binding: 'nats', url: `${server.url}/${id}` }],
            runningTasks: () => 0,
          },
        ),
      );
    });
    const deadline = Date.now() + 30_000;
    while (seenAt.size < agents && Date.now() < deadline) await sleep(20);
    const joinedMs = performance.now() - t0;
    if (seenAt.size < agents) throw new Error(`the watch reported ${seenAt.size} of ${agents} joins within 30 s`);
    const latencies = [...sentAt].map(([id, at]) => seenAt.get(id)! - at);
    const tap = percentiles(latencies);
    log(
      `  joins seen by the watch: p50 ${tap.p50.toFixed(1)} ms, p99 ${tap.p99.toFixed(1)} ms; all ${agents} in ${Math.round(joinedMs)} ms`,
    );

    // Discovery as a requester does it: mesh.discover, answered from the Mesh's watch of the registry.
    const { connectMesh } = await import('../../dist/reference/mesh/connect.js');
    const mesh = await connectMesh(server.url, { agentId: 'bench.reg-discoverer' });
    const discoverMs: number[] = [];
    let discovered = 0;
    try {
      while ((await mesh.discover({})).length < agents && Date.now() < deadline + 30_000) await sleep(20);
      for (let rep = 0; rep < DISCOVERIES; rep++) {
        const capability = cardOf(`bench.reg-${rep % agents}`).capabilities[0]!.name;
        const t = performance.now();
        discovered += (await mesh.discover({ capability, version: '^1' })).length;
        discoverMs.push(performance.now() - t);
      }
    } finally {
      await mesh.close();
    }
    const discovery = percentiles(discoverMs);
    log(`  mesh.discover from the watch: p50 ${discovery.p50.toFixed(3)} ms, p99 ${discovery.p99.toFixed(3)} ms over ${agents} entries`);

    // Heartbeats: every member renews for the window; nothing else runs on these connections.
    const before = traffic(conns.slice(0, CONNECTIONS));
    const watcherBefore = traffic([watcherNc]);
    const w0 = performance.now();
    await sleep(windowMs);
    const seconds = (performance.now() - w0) / 1000;
    const after = traffic(conns.slice(0, CONNECTIONS));
    const watcherAfter = traffic([watcherNc]);
    const perAgent = {
      bytes: (after.bytes - before.bytes) / agents / seconds,
      msgs: (after.msgs - before.msgs) / agents / seconds,
    };
    log(`  heartbeats: ${perAgent.bytes.toFixed(0)} bytes/s and ${perAgent.msgs.toFixed(2)} messages/s per agent`);

    const t = performance.now();
    const listed = await watcher.list({});
    const listMs = performance.now() - t;
    const entryBytes = JSON.stringify((await watcher.get('bench.reg-0'))?.entry ?? {}).length;
    await Promise.all(memberships.map((m) => m.leave()));

    // The floor: the same entry text created under new keys of a bucket of its own, seen by a bare watch.
    const kvm = new Kvm(watcherNc);
    const bare = await kvm.create('BENCH_REGISTRY_FLOOR', { history: 1 });
    const bareSeen = new Map<string, number>();
    const bareWatch = await bare.watch({ key: '>' });
    void (async () => {
      for await (const e of bareWatch) bareSeen.set(e.key, performance.now());
    })();
    const text = JSON.stringify((listed[0]?.entry as unknown) ?? {});
    const bareSent = new Map<string, number>();
    const writers = await Promise.all(conns.slice(0, CONNECTIONS).map((nc) => new Kvm(nc).open('BENCH_REGISTRY_FLOOR')));
    await pool(agents, JOINING_AT_ONCE, async (i) => {
      const key = `bench.reg-${i}`;
      bareSent.set(key, performance.now());
      await writers[i % CONNECTIONS]!.create(key, text);
    });
    const bareDeadline = Date.now() + 30_000;
    while (bareSeen.size < agents && Date.now() < bareDeadline) await sleep(20);
    bareWatch.stop();
    const floor = percentiles([...bareSent].filter(([k]) => bareSeen.has(k)).map(([k, at]) => bareSeen.get(k)! - at));

    watch.stop();
    if (selected('registry.discovery')) {
      const figure = {
        name: `TAP registry, ${agents} agents (watch)`,
        value: spread([tap.p50]),
        extra: { p99_ms: spread([tap.p99]), discover_ms: spread([discovery.p50]), discover_p99_ms: spread([discovery.p99]) },
      };
      rows.push({
        ...discoveryRow,
        tap: figure,
        baselines: [
          compare(figure, 'bare-kv', {
            name: 'bare key-value create seen by a bare watch (floor)',
            value: spread([floor.p50]),
            extra: { p99_ms: spread([floor.p99]) },
          }),
        ],
        targets: [
          {
            text: DISCOVERY_TARGET(1000),
            measured: `mesh.discover p50 ${discovery.p50.toFixed(3)} ms, p99 ${discovery.p99.toFixed(3)} ms over ${agents.toLocaleString('en-US')} agents`,
            met: agents >= 1000 ? discovery.p50 < 1 : null,
          },
        ],
        details: {
          agents,
          discoveries: DISCOVERIES,
          discovered_per_query: Math.round(discovered / DISCOVERIES),
          all_joined_ms: Math.round(joinedMs),
          cold_list_ms: Math.round(listMs),
          listed: listed.length,
          entry_bytes: entryBytes,
        },
      });
    }
    if (selected('registry.heartbeats')) {
      rows.push({
        ...heartbeatRow,
        tap: {
          name: `TAP membership renewals, heartbeat ${heartbeatMs} ms`,
          value: spread([perAgent.bytes]),
          extra: { messages_per_s: spread([perAgent.msgs]) },
        },
        baselines: [
          missingBaseline(
            'none',
            'no baseline',
            'a renewal is one key-value update of the entry; its bytes are the entry, given under Details',
          ),
        ],
        targets: [
          {
            text: HEARTBEAT_TARGET(1000),
            measured: `${Math.round(perAgent.bytes)} bytes/s and ${perAgent.msgs.toFixed(2)} messages/s per agent (heartbeat ${heartbeatMs / 1000} s, ${agents.toLocaleString('en-US')} agents)`,
            met: agents >= 1000 ? true : null,
          },
        ],
        details: {
          agents,
          heartbeat_ms: heartbeatMs,
          window_s: Number(seconds.toFixed(1)),
          entry_bytes: entryBytes,
          per_agent_bytes_per_s: Math.round(perAgent.bytes),
          per_agent_messages_per_s: Number(perAgent.msgs.toFixed(3)),
          watcher_in_bytes_per_s: Math.round((watcherAfter.bytes - watcherBefore.bytes) / seconds),
          watcher_in_messages_per_s: Math.round((watcherAfter.msgs - watcherBefore.msgs) / seconds),
        },
      });
    }
  } catch (err) {
    const reason = (err as Error).message.split('\n')[0]!;
    for (const r of [discoveryRow, heartbeatRow])
      if (selected(r.id) && !rows.some((x) => x.id === r.id)) rows.push(notRun(r, reason, targetsOf(r)));
  } finally {
    for (const nc of conns) await nc.close().catch(() => {});
    await server.stop();
  }
  return rows;
}
