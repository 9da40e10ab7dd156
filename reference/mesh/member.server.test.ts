import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { createAgent, withConformanceCapabilities, type Agent } from '../agent/index.ts';
import { connectNats } from '../client/index.ts';
import type { AgentCard } from '../../schemas/src/index.ts';
import { NO_NATS_SERVER, natsServerInstalled, startNatsServer, type NatsServer } from '../transports/nats/nats-server.testkit.ts';
import { newSigningKey, trustOf } from '../trust.ts';
import type { RegistryRecord } from './entry.ts';
import { joinRegistry } from './member.ts';
import { connectMesh } from './connect.ts';
import { joinMesh } from './join.ts';
import { openRegistry, type Registry } from './registry.ts';
import { signEntry } from './signature.ts';
import { testEntry } from './mesh.testkit.ts';
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

/** Runs a write against the key's last revision, again if the agent's own write came between. */
async function between(registry: Registry, agentId: string, write: (revision: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      await write((await registry.lastRevision(agentId))!);
      return;
    } catch (err) {
      if (i > 20 || !/wrong last sequence/.test((err as Error).message)) throw err;
    }
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
    await agent.listenNats({ url: server.url, keepaliveMs: 1000 });
    return agent;
  }

  it('registers its handshake card, its NATS endpoint and its load, and renews them every heartbeat (TAP-REG-002, TAP-REG-004, TAP-REG-013)', async () => {
    const agent = await serve('mesh.one');
    const joined = await joinMesh(agent, { url: server.url, heartbeatMs: 200, ttlMs: 1000 });
    const first = (await registry.get('mesh.one'))!;
    expect(first.entry.instance).toBe(joined.instance);
    expect(first.entry.versions).toEqual(['1.1', '1.0']);
    expect(first.entry.endpoints).toEqual([{ binding: 'nats', url: `${server.url}/mesh.one` }]);
    expect(first.entry.load).toEqual({ running_tasks: 0, max_concurrent_tasks: 6 });
    expect([first.entry.heartbeat_ms, first.entry.ttl_ms]).toEqual([200, 1000]);
    const c = await connectNats(first.entry.endpoints[0]!.url, { agentId: 'mesh.requester', nats: { keepaliveMs: 1000 } });
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
      // Renewed before the entry could turn stale (the ttl, 1000 ms; spec: registry#heartbeats), loaded machine or not.
      expect(writes[i]!.writtenAt.getTime() - writes[i - 1]!.writtenAt.getTime()).toBeLessThan(1000);
      expect(writes[i]!.entry.instance).toBe(joined.instance);
      expect(writes[i]!.entry.started_at).toBe(first.entry.started_at);
    }
  });

  it('serves several agents of one process over one NATS connection: listenNats({ nc }) and joinMesh(agent, { nc }), as the README says', async () => {
    const shared = await connect({ servers: server.url });
    cleanups.push(() => shared.close());
    for (const id of ['mesh.shared-a', 'mesh.shared-b']) {
      const agent = createAgent({ card: card(id), capabilities: withConformanceCapabilities(), logger: () => {} });
      cleanups.push(() => agent.shutdown());
      await agent.listenNats({ nc: shared, keepaliveMs: 1000 });
      await joinMesh(agent, { nc: shared, heartbeatMs: 1000, ttlMs: 3000 });
    }
    const mesh = await connectMesh(server.url, { agentId: 'mesh.requester' });
    cleanups.push(() => mesh.close());
    await until(
      () => mesh.discover({ capability: 'tap.test.echo' }),
      (found) => ['mesh.shared-a', 'mesh.shared-b'].every((id) => found.some((e) => e.agent_id === id)),
    );
    const answered = new Set<string>();
    for (let i = 0; i < 8; i++) {
      const task = await mesh.task('tap.test.echo', i, { route: 'round-robin' });
      expect((await task.result).output).toBe(i);
      if (task.agentId?.startsWith('mesh.shared-')) answered.add(task.agentId);
    }
    expect([...answered].sort()).toEqual(['mesh.shared-a', 'mesh.shared-b']);
    expect(shared.isClosed()).toBe(false);
  });

  it('moves its load figure as tasks start and end (TAP-REG-006, TAP-REG-019)', async () => {
    const agent = await serve('mesh.load');
    await joinMesh(agent, { url: server.url, heartbeatMs: 1000, ttlMs: 3000 });
    const c = await connectNats(`${server.url}/mesh.load`, { agentId: 'mesh.requester', nats: { keepaliveMs: 1000 } });
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
    // A lifetime of a second: the second process starts while the first's entry is live, however
    // late a loaded machine runs the first's heartbeats of 100 ms.
    const one = await serve('mesh.twin');
    await joinMesh(one, { url: server.url, heartbeatMs: 100, ttlMs: 1000 });
    const two = await serve('mesh.twin');
    await expect(joinMesh(two, { url: server.url, heartbeatMs: 100, ttlMs: 1000 })).rejects.toThrow(
      /agent id mesh.twin is taken in the mesh/,
    );
    // The first one dies without withdrawing: its NATS connections go, its entry turns stale.
    const stale = (await registry.get('mesh.twin'))!;
    await one.shutdown();
    await registry.create({ ...stale.entry, updated_at: new Date().toISOString() }).catch(() => {});
    await sleep(1050);
    const joined = await joinMesh(two, { url: server.url, heartbeatMs: 100, ttlMs: 1000 });
    expect((await registry.get('mesh.twin'))?.entry.instance).toBe(joined.instance);
  });

  it('writes its entry again when another process overwrites or deletes it while it is live (TAP-REG-018)', async () => {
    const agent = await serve('mesh.kept');
    // An entry lives 1.5 s: an agent that notices the overwrite a lifetime after its last write
    // rightly leaves (TAP-REG-046), and under the load of npm test a heartbeat of 100 ms came 300 ms late.
    const joined = await joinMesh(agent, { url: server.url, heartbeatMs: 100, ttlMs: 1500 });
    let ended = false;
    void joined.ended.then(() => (ended = true));
    const held = (await registry.get('mesh.kept'))!;
    const forged = {
      ...held.entry,
      instance: 'someone-else',
      endpoints: [{ binding: 'nats' as const, url: 'nats://127.0.0.1:9/mesh.kept' }],
      updated_at: new Date().toISOString(),
    };
    await between(registry, 'mesh.kept', (revision) => registry.update(forged, revision));
    const back = await until(
      () => registry.get('mesh.kept'),
      (x) => x?.entry.instance === joined.instance,
    );
    expect(back?.entry.endpoints).toEqual([{ binding: 'nats', url: `${server.url}/mesh.kept` }]);
    // A delete by another process is no withdrawal of this agent's: it writes its entry again too.
    await between(registry, 'mesh.kept', (revision) => registry.withdraw('mesh.kept', revision));
    await until(
      () => registry.get('mesh.kept'),
      (x) => x?.entry.instance === joined.instance,
    );
    expect(joined.reasserted).toBeGreaterThanOrEqual(2);
    await sleep(1600);
    expect([ended, (await registry.get('mesh.kept'))?.entry.instance]).toEqual([false, joined.instance]);
  });

  it('signs every write with its key, and refuses a key of another principal (TAP-REG-052)', async () => {
    const key = newSigningKey('mesh.signed');
    const trusted = await openRegistry(nc, { trust: trustOf([key]) });
    const agent = await serve('mesh.signed');
    await expect(
      joinMesh(agent, { url: server.url, heartbeatMs: 100, ttlMs: 1000, signingKey: newSigningKey('mesh.other') }),
    ).rejects.toThrow(/belongs to mesh.other, not to agent mesh.signed/);
    const joined = await joinMesh(agent, { url: server.url, heartbeatMs: 100, ttlMs: 1000, signingKey: key });
    const first = (await trusted.get('mesh.signed'))!;
    expect(first.entry.instance).toBe(joined.instance);
    const later = await until(
      () => trusted.get('mesh.signed'),
      (x) => x !== undefined && x.revision > first.revision,
    );
    expect(later!.entry.signature).not.toBe(first.entry.signature);
    // A reader whose trust file binds another key to the agent id refuses the very same entry.
    const misled = await openRegistry(nc, { trust: trustOf([{ ...newSigningKey('mesh.signed') }]) });
    expect(await misled.get('mesh.signed')).toBeUndefined();
  });

  it('keeps its entry against a forgery, which a reader with the trust file never takes (TAP-REG-018, TAP-REG-053)', async () => {
    const key = newSigningKey('mesh.target');
    const mallory = newSigningKey('mesh.mallory');
    const trusted = await openRegistry(nc, { trust: trustOf([key, mallory]) });
    const agent = await serve('mesh.target');
    // 1.5 s, as for mesh.kept: an agent that notices a forgery a lifetime after its last write leaves.
    const joined = await joinMesh(agent, { url: server.url, heartbeatMs: 100, ttlMs: 1500, signingKey: key });
    const held = (await registry.get('mesh.target'))!;
    const evil = { binding: 'nats' as const, url: 'nats://127.0.0.1:9/mesh.target' };
    // Signed by another principal, then not signed at all; each under the agent's key.
    for (const forged of [
      signEntry({ ...held.entry, instance: 'mallory', endpoints: [evil], updated_at: new Date().toISOString() }, mallory),
      { ...held.entry, instance: 'mallory', endpoints: [evil], updated_at: new Date().toISOString(), signature: undefined },
    ]) {
      await between(registry, 'mesh.target', (revision) => registry.update(forged, revision));
      // Until the agent writes again, the reader with the trust file sees no entry; never the forgery.
      const readings: (string | undefined)[] = [];
      const back = await until(
        async () => {
          const r = await trusted.get('mesh.target');
          readings.push(r?.entry.instance);
          return r;
        },
        (x) => x?.entry.instance === joined.instance,
      );
      expect(readings.filter((i) => i !== undefined && i !== joined.instance)).toEqual([]);
      expect(back?.entry.endpoints).toEqual([{ binding: 'nats', url: `${server.url}/mesh.target` }]);
    }
    expect(joined.reasserted).toBe(2);
  });

  it('leaves when another process of its agent id, signed with its key, took over after its entry could have turned stale (TAP-REG-011, TAP-REG-018)', async () => {
    const key = newSigningKey('mesh.paused');
    const one = await serve('mesh.paused');
    const two = await serve('mesh.paused');
    const source = (agent: Agent) => ({
      card: agent.card,
      versions: ['1.0'],
      endpoints: () => [{ binding: 'nats' as const, url: `${server.url}/mesh.paused` }],
      runningTasks: () => agent.stats().activeTasks,
    });
    // The first process's writes stall, as if it were paused or cut off, until the gate opens.
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let stalled = false;
    const stalling = new Proxy(registry, {
      get(target, name) {
        if (name === 'update')
          return async (...args: Parameters<Registry['update']>) => {
            if (stalled) await gate;
            return target.update(...args);
          };
        const value = Reflect.get(target, name) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const first = await joinRegistry(stalling, { heartbeatMs: 100, ttlMs: 300, signingKey: key }, source(one));
    cleanups.push(() => first.leave());
    stalled = true;
    await sleep(450);
    const second = await joinRegistry(registry, { heartbeatMs: 100, ttlMs: 300, signingKey: key }, source(two));
    cleanups.push(() => second.leave());
    open();
    expect(await first.ended).toBe('another process took the registry entry');
    await sleep(250);
    expect((await registry.get('mesh.paused'))?.entry.instance).toBe(second.instance);
    expect(second.reasserted).toBe(0);
  });

  it('joins over a live entry under its key that does not verify with it, when it signs (TAP-REG-045)', async () => {
    const key = newSigningKey('mesh.squatted');
    const agent = await serve('mesh.squatted');
    await registry.create(
      testEntry('mesh.squatted', {
        instance: 'squatter',
        card: agent.card,
        endpoints: [{ binding: 'nats', url: 'nats://127.0.0.1:9/mesh.squatted' }],
        load: { running_tasks: 0, max_concurrent_tasks: 6 },
        heartbeat_ms: 1000,
        ttl_ms: 4000,
      }),
    );
    await expect(joinMesh(agent, { url: server.url, heartbeatMs: 100, ttlMs: 1000 })).rejects.toThrow(/is taken in the mesh/);
    const joined = await joinMesh(agent, { url: server.url, heartbeatMs: 100, ttlMs: 1000, signingKey: key });
    expect((await registry.get('mesh.squatted'))?.entry.instance).toBe(joined.instance);
  });

  it('refuses to write an entry larger than 64 KiB (TAP-REG-047)', async () => {
    // A card of many capabilities with long descriptions, each valid, together too large for an entry.
    const capability = (i: number) => ({
      name: `big.cap${i}`,
      version: '1.0.0',
      description: 'x'.repeat(4000),
      input_formats: ['text'],
      output_formats: ['text'],
      streaming: false,
      side_effects: false,
    });
    const source = {
      card: { ...card('mesh.huge'), capabilities: Array.from({ length: 20 }, (_, i) => capability(i)) },
      versions: ['1.0'],
      endpoints: () => [{ binding: 'nats' as const, url: `${server.url}/mesh.huge` }],
      runningTasks: () => 0,
    };
    await expect(joinRegistry(registry, { heartbeatMs: 100, ttlMs: 300 }, source)).rejects.toThrow(
      /the registry entry of mesh.huge is \d+ bytes of JSON, more than an entry may be \(65536\)/,
    );
    expect(await registry.lastRevision('mesh.huge')).toBeUndefined();
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
