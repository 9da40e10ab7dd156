/**
 * A registry that survives a node (spec: registry#nats, TAP-REG-065; bindings-nats#replicas): on a
 * three-node cluster the registry bucket is created with three replicas; a coordinator routes
 * tasks through the mesh to six agents on three connections, one per node, while an agent
 * connection dies (its tasks move) and the node that leads the bucket is killed with SIGKILL.
 * Every task ends once, completed; the registry elects another leader, the live agents stay
 * listed, and an agent that joins after the kill is discovered and served, also by a watch whose
 * consumer the killed node held.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import {
  NO_NATS_SERVER,
  natsServerInstalled,
  startNatsCluster,
  type NatsCluster,
  whileElecting,
} from '../transports/nats/nats-server.testkit.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';
import { hostAgents, type Host } from './agent-host.ts';
import { Mesh } from './mesh.ts';
import { viewOf } from './registry-view.ts';
import { openRegistry, REGISTRY_BUCKET, type RegistryWatch } from './registry.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

const STREAM = `KV_${REGISTRY_BUCKET}`;
const IN_FLIGHT = 12;
/**
 * The entries must outlive the bucket's election of a new leader, when no heartbeat lands: about
 * 10 s on nats-server 2.9 (its election timeouts are 4–9 s), more on a loaded machine.
 */
const HEARTBEAT_MS = 1000;
const TTL_MS = 30_000;
/** The names of the consumers of the registry's stream. */
async function consumerNames(jsm: JetStreamManager): Promise<string[]> {
  const names: string[] = [];
  for await (const c of jsm.consumers.list(STREAM)) names.push(c.name);
  return names;
}
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Waits until `ok` resolves true, asking every 100 ms; fails with `what` after `ms`. */
async function until(what: string, ok: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await ok().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms / 1000} s`);
    await sleep(100);
  }
}

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'the registry on a three-node cluster losing a node'), () => {
  let cluster: NatsCluster | undefined;
  const conns: NatsConnection[] = [];
  const hosts: Host[] = [];
  let mesh: Mesh | undefined;
  /** The routing loop runs while this holds; a failed test ends it here too. */
  let routing = false;
  afterAll(async () => {
    routing = false;
    // Every step is bounded: a registry without a leader (the failure this test looks for) must not hold the teardown.
    const bounded = (p: Promise<unknown> | undefined): Promise<unknown> => Promise.race([p?.catch(() => {}), sleep(10_000)]);
    await bounded(mesh?.close());
    await Promise.all(hosts.map((h) => bounded(h.stop('the test ended'))));
    await Promise.all(conns.map((c) => bounded(c.close())));
    await cluster?.stop();
  });

  it('keeps routing, moving and discovering when the node leading the registry is killed (TAP-REG-065)', { timeout: 120_000 }, async () => {
    cluster = await startNatsCluster(3);
    const urls = cluster.servers.map((s) => s.url);
    // Each connection prefers one node and lists the others after it.
    const connectTo = async (first: number): Promise<NatsConnection> => {
      const nc = await connect({
        servers: [...urls.slice(first), ...urls.slice(0, first)],
        noRandomize: true,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 100,
      });
      conns.push(nc);
      return nc;
    };
    const admin = await connectTo(0);
    // No replicas option: the member reads the cluster's size from the server (TAP-NATS-070).
    const registry = await whileElecting(() => openRegistry(admin), 30_000);
    const jsm = await jetstreamManager(admin);
    const created = await jsm.streams.info(STREAM);
    expect(created.config.num_replicas).toBe(3);
    const leader = created.cluster?.leader;
    const victim = cluster.servers.findIndex((s) => s.name === leader);
    expect(victim).toBeGreaterThanOrEqual(0);
    const other = (k: number): number => (victim + k) % 3;

    // The coordinator and one agent connection on the node that dies; the crashing agents and the rest elsewhere.
    const host = async (first: number, ids: string[]): Promise<Host> => {
      const h = await hostAgents({ url: urls[first]!, nc: await connectTo(first), ids, heartbeatMs: HEARTBEAT_MS, ttlMs: TTL_MS });
      hosts.push(h);
      return h;
    };
    const crashing = await host(other(1), ['cluster.a0', 'cluster.a1']);
    await host(victim, ['cluster.b0', 'cluster.b1']);
    await host(other(2), ['cluster.c0', 'cluster.c1']);
    const meshNc = await connectTo(victim);
    const view = await viewOf(await openRegistry(meshNc));
    mesh = new Mesh({
      registry: view,
      agentId: 'cluster.coordinator',
      nats: { nc: meshNc },
      maxAttempts: 10,
      onClose: async () => view.stop(),
    });
    const m = mesh;
    // A watch whose consumer the victim holds, so that its loss is always tried: the server places
    // a watch's consumer on any node of the stream, so watches are opened until one lands there.
    let probeJoinedLateAt = 0;
    let probe: RegistryWatch;
    const probeRegistry = await openRegistry(await connectTo(other(1)));
    for (let tries = 0; ; tries++) {
      const before = new Set(await consumerNames(jsm));
      const watch = await probeRegistry.watch((change) => {
        if (change.kind === 'joined' && change.agentId === 'cluster.late') probeJoinedLateAt = Date.now();
      });
      await watch.ready;
      probe = watch;
      const added = (await consumerNames(jsm)).filter((n) => !before.has(n));
      const holder = added.length === 1 ? (await jsm.consumers.info(STREAM, added[0]!)).cluster?.leader : undefined;
      if (holder === leader) break;
      watch.stop();
      expect(tries).toBeLessThan(30);
    }
    const listed = async (): Promise<string[]> => (await m.discover({ capability: 'tap.test.sleep' })).map((e) => e.agent_id).sort();
    await until('all six agents joining', async () => (await listed()).length === 6);

    // Routing runs until told to stop; each submission records its one ending.
    const outcomes = new Map<number, { status?: string; error?: string; agents: string[]; at?: number }>();
    let submitted = 0;
    // The tasks sent and not yet ended, each with the agent of its current attempt.
    const inflight = new Set<{ readonly agentId: string | undefined }>();
    routing = true;
    const worker = async (): Promise<void> => {
      while (routing) {
        const i = submitted++;
        let task: Awaited<ReturnType<Mesh['task']>> | undefined;
        try {
          task = await m.task('tap.test.sleep', { ms: 100 + (i % 5) * 20 });
          inflight.add(task);
          const result = await task.result;
          expect(outcomes.has(i)).toBe(false);
          outcomes.set(i, { status: String(result.status), agents: task.hops.map((h) => h.agentId) });
        } catch (err) {
          outcomes.set(i, { error: (err as Error).message, agents: task?.hops.map((h) => h.agentId) ?? [], at: Date.now() });
          // A mesh that refuses at once must not spin on promises alone: timers (the test's timeout among them) must run.
          await sleep(50);
        } finally {
          if (task) inflight.delete(task);
        }
      }
    };
    const workers = Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    await until('the first 50 tasks ending', async () => outcomes.size >= 50);
    // The crash comes while a task runs on a crashing agent (each sleeps 100 ms or more), so that
    // one must move: under load, routing can leave those two agents idle at any one moment.
    await until('a task running on a crashing agent', async () => [...inflight].some((t) => t.agentId?.startsWith('cluster.a')));

    // An agent connection dies holding tasks, and at once the node leading the registry bucket.
    await crashing.nc.close();
    await cluster.servers[victim]!.kill('SIGKILL');
    const atKill = submitted;
    const killedAt = Date.now();

    // The bucket elects a leader on a live node and takes writes again: heartbeats and a new agent.
    await until(
      'a new leader of the registry bucket',
      async () => {
        const info = await jsm.streams.info(STREAM);
        return info.cluster?.leader !== undefined && info.cluster.leader !== leader;
      },
      60_000,
    );
    const electedMs = Date.now() - killedAt;
    await host(other(2), ['cluster.late']);
    const expected = ['cluster.b0', 'cluster.b1', 'cluster.c0', 'cluster.c1', 'cluster.late'];
    const lists = (ids: string[]): boolean => expected.every((id) => ids.includes(id));
    // Discovery keeps answering: the live agents and the newcomer are listed (the crashed ones until their lifetime ends).
    await until('discovery listing the live agents and the newcomer', async () => lists(await listed()), 30_000);
    const discoveredMs = Date.now() - killedAt;
    // The watch that lost its consumer with the node started again and saw the newcomer join, well
    // before the client would notice two missed heartbeats of 30 s.
    await until('the watch whose consumer died seeing the newcomer', async () => probeJoinedLateAt > 0, 30_000);
    expect(probeJoinedLateAt - killedAt).toBeLessThan(45_000);
    probe.stop();
    // A fresh reading of the bucket, not the watch, agrees, and finds every live entry renewed since the kill.
    const cold = await openRegistry(await connectTo(other(2)));
    await until(
      'a fresh listing of the bucket with every live entry renewed after the kill',
      async () => {
        const records = await cold.list({ capability: 'tap.test.sleep' });
        return lists(records.filter((r) => r.writtenAt.getTime() > killedAt).map((r) => r.entry.agent_id));
      },
      30_000,
    );
    // Routing goes on past the loss: another 50 tasks after the newcomer was listed.
    const listedMs = Date.now() - killedAt;
    const later = submitted;
    await until('another 50 tasks ending', async () => outcomes.size >= later + 50, 60_000);
    routing = false;
    await workers;

    // Every submission ended exactly once. Every task sent completed; a submission may have been
    // refused before anything was sent only while the watch of a moved connection was empty, between
    // the kill and discovery listing the live agents again, never after.
    expect(outcomes.size).toBe(submitted);
    // A first connection to a crashed agent whose entry has not expired is no such refusal: the copy
    // goes on to a live candidate (TAP-MESH-024), so it must complete.
    const unsent = (o: { error?: string }) => o.error?.endsWith('nothing was sent') === true;
    const failed = [...outcomes].filter(([, o]) => o.status !== 'completed' && !unsent(o));
    expect(failed).toEqual([]);
    const refusedLate = [...outcomes].filter(([, o]) => unsent(o) && (o.at! < killedAt || o.at! > killedAt + discoveredMs + 1000));
    expect(refusedLate).toEqual([]);
    // Some moved off the crashed agents; none finished on one after the crash.
    const moved = [...outcomes.values()].filter((o) => o.agents.length > 1);
    expect(moved.length).toBeGreaterThan(0);
    const endedOnCrashed = [...outcomes].filter(([i, o]) => i >= atKill && o.agents.at(-1)?.startsWith('cluster.a'));
    expect(endedOnCrashed).toEqual([]);
    // The newcomer was routed to.
    expect([...outcomes.values()].some((o) => o.agents.at(-1) === 'cluster.late')).toBe(true);
    expect(registry.bucket).toBe(REGISTRY_BUCKET);
    console.log(
      `registry cluster: ${submitted} submissions, ${[...outcomes.values()].filter(unsent).length} refused unsent during the election, ${moved.length} moved; node ${leader} killed after ${atKill} submissions; leader now ${(await jsm.streams.info(STREAM)).cluster?.leader} after ${electedMs} ms, discovery listed the newcomer after ${discoveredMs} ms, a fresh listing after ${listedMs} ms`,
    );
  });
});
