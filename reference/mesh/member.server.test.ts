import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { createAgent, withConformanceCapabilities, type Agent } from '../agent/index.ts';
import { connectNats } from '../client/index.ts';
import type { AgentCard } from '../../schemas/src/index.ts';
import { NO_NATS_SERVER, natsServerInstalled, startNatsServer, type NatsServer } from '../transports/nats/nats-server.testkit.ts';
import type { RegistryRecord } from './entry.ts';
import { joinMesh } from './join.ts';
import { openRegistry, type Registry } from './registry.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const card = (agentId: string): AgentCard => ({
  agent_id: agentId,
  name: 'mesh test agent',
  description: 'An agent that joins a mesh in tests.',
  capabilities: [],
  limits: { max_concurrent_tasks: 6, max_task_seconds: 60, max_message_bytes: 1048576 },
});

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
});

/** Polls `read` every 20 ms until `check` holds of its answer; fails after `ms`. */
async function until<T>(read: () => Promise<T>, check: (v: T) => boolean, ms = 3000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (check(v)) return v;
    if (Date.now() > end) throw new Error(`the condition did not hold in time; last seen: ${JSON.stringify(v)?.slice(0, 300)}`);
    await sleep(20);
  }
}

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'an agent in a mesh (spec: registry)'), () => {
  let server: NatsServer;
  let nc: NatsConnection;
  let registry: Registry;
  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
    registry = await openRegistry(nc, { maxAgeMs: 5000 });
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  async function serve(agentId: string): Promise<Agent> {
    const agent = createAgent({ card: card(agentId), capabilities: withConformanceCapabilities(), logger: () => {} });
    cleanups.push(() => agent.shutdown());
    await agent.listenNats({ url: server.url, keepaliveMs: 100 });
    return agent;
  }

  it('registers its handshake card, its NATS endpoint and its load, and renews them every heartbeat (TAP-REG-002, TAP-REG-004, TAP-REG-013)', async () => {
    const agent = await serve('mesh.one');
    const joined = await joinMesh(agent, { url: server.url, heartbeatMs: 200, ttlMs: 1000 });
    const first = (await registry.get('mesh.one'))!;
    expect(first.entry.instance).toBe(joined.instance);
    expect(first.entry.versions).toEqual(['1.0']);
    expect(first.entry.endpoints).toEqual([{ binding: 'nats', url: `${server.url}/mesh.one` }]);
    expect(first.entry.load).toEqual({ running_tasks: 0, max_concurrent_tasks: 6 });
    expect([first.entry.heartbeat_ms, first.entry.ttl_ms]).toEqual([200, 1000]);
    const c = await connectNats(first.entry.endpoints[0]!.url, { agentId: 'mesh.requester', nats: { keepaliveMs: 100 } });
    cleanups.push(() => c.close());
    expect(first.entry.card).toEqual(c.handshake.agent);
    // Renewed by heartbeats: later writes, no gap as long as the heartbeat, the same instance throughout.
    const writes: RegistryRecord[] = [first];
    while (writes.length < 4) {
      const r = await until(
        () => registry.get('mesh.one'),
        (x) => x !== undefined && x.revision !== writes.at(-1)!.revision,
      );
      writes.push(r!);
    }
    for (let i = 1; i < writes.length; i++) {
      expect(writes[i]!.writtenAt.getTime() - writes[i - 1]!.writtenAt.getTime()).toBeLessThan(400);
      expect(writes[i]!.entry.instance).toBe(joined.instance);
      expect(writes[i]!.entry.started_at).toBe(first.entry.started_at);
    }
  });

  it('moves its load figure as tasks start and end (TAP-REG-006, TAP-REG-019)', async () => {
    const agent = await serve('mesh.load');
    await joinMesh(agent, { url: server.url, heartbeatMs: 1000, ttlMs: 3000 });
    const c = await connectNats(`${server.url}/mesh.load`, { agentId: 'mesh.requester', nats: { keepaliveMs: 100 } });
    cleanups.push(() => c.close());
    const tasks = [0, 1, 2].map(() => c.submit('tap.test.sleep', { ms: 600 }));
    const busy = await until(
      () => registry.get('mesh.load'),
      (x) => x?.entry.load.running_tasks === 3,
      900,
    );
    expect(busy?.entry.load.max_concurrent_tasks).toBe(6);
    await Promise.all(tasks.map((t) => t.result));
    await until(
      () => registry.get('mesh.load'),
      (x) => x?.entry.load.running_tasks === 0,
      900,
    );
  });

  it('withdraws its entry with a delete as it shuts down, and writes it no more (TAP-REG-025, TAP-REG-028, TAP-REG-043)', async () => {
    const agent = await serve('mesh.bye');
    const joined = await joinMesh(agent, { url: server.url, heartbeatMs: 100, ttlMs: 1000 });
    expect(await registry.get('mesh.bye')).toBeDefined();
    await agent.shutdown();
    expect(await joined.ended).toBe('left the mesh');
    expect(await registry.get('mesh.bye', { includeStale: true })).toBeUndefined();
    const marker = await registry.lastRevision('mesh.bye');
    await sleep(300);
    expect(await registry.lastRevision('mesh.bye')).toBe(marker);
  });

  it('refuses an agent id that a live entry of another process holds, and takes over a stale one (TAP-REG-010, TAP-REG-011)', async () => {
    const one = await serve('mesh.twin');
    await joinMesh(one, { url: server.url, heartbeatMs: 100, ttlMs: 300 });
    const two = await serve('mesh.twin');
    await expect(joinMesh(two, { url: server.url, heartbeatMs: 100, ttlMs: 300 })).rejects.toThrow(
      /agent id mesh.twin is taken in the mesh/,
    );
    // The first one dies without withdrawing: its NATS connections go, its entry turns stale.
    const stale = (await registry.get('mesh.twin'))!;
    await one.shutdown();
    await registry.create({ ...stale.entry, updated_at: new Date().toISOString() }).catch(() => {});
    await sleep(350);
    const joined = await joinMesh(two, { url: server.url, heartbeatMs: 100, ttlMs: 300 });
    expect((await registry.get('mesh.twin'))?.entry.instance).toBe(joined.instance);
  });

  it('leaves the mesh when another process overwrites its entry (TAP-REG-018)', async () => {
    const agent = await serve('mesh.lost');
    const joined = await joinMesh(agent, { url: server.url, heartbeatMs: 100, ttlMs: 300 });
    const held = (await registry.get('mesh.lost'))!;
    const other = { ...held.entry, instance: 'someone-else', updated_at: new Date().toISOString() };
    await registry.update(other, held.revision).catch(async () => registry.update(other, (await registry.lastRevision('mesh.lost'))!));
    expect(await joined.ended).toBe('another process took the registry entry');
    await sleep(250);
    expect((await registry.get('mesh.lost', { includeStale: true }))?.entry.instance).toBe('someone-else');
  });

  it('refuses a heartbeat below 100 ms, a lifetime below two heartbeats, one above the bucket max_age, and an agent without listeners (TAP-REG-014, TAP-REG-041)', async () => {
    const agent = await serve('mesh.bad');
    await expect(joinMesh(agent, { url: server.url, heartbeatMs: 50 })).rejects.toThrow(/at least 100 ms/);
    await expect(joinMesh(agent, { url: server.url, heartbeatMs: 200, ttlMs: 300 })).rejects.toThrow(/at least twice/);
    await expect(joinMesh(agent, { url: server.url, heartbeatMs: 2000, ttlMs: 6000 })).rejects.toThrow(/max_age \(5000 ms\)/);
    const quiet = createAgent({ card: card('mesh.quiet'), capabilities: withConformanceCapabilities(), logger: () => {} });
    cleanups.push(() => quiet.shutdown());
    await expect(joinMesh(quiet, { url: server.url })).rejects.toThrow(/accepts no sessions/);
  });
});
