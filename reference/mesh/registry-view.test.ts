import { describe, expect, it, vi } from 'vitest';
import { hostCard } from './agent-host.ts';
import { testCapability } from './mesh.testkit.ts';
import type { RegistryRecord } from './entry.ts';
import type { Registry, RegistryChange } from './registry.ts';
import { viewOf } from './registry-view.ts';

/** A record of `agentId` offering the host card's capabilities, written `agoMs` ago with a lifetime of `ttlMs`. */
function record(agentId: string, revision: number, ttlMs = 60_000, agoMs = 0): RegistryRecord {
  const now = new Date().toISOString();
  return {
    revision,
    writtenAt: new Date(Date.now() - agoMs),
    entry: {
      agent_id: agentId,
      instance: 'i1',
      card: { ...hostCard(agentId), capabilities: [testCapability('tap.test.echo', 'echoes')] },
      versions: ['1.0'],
      endpoints: [{ binding: 'nats', url: `nats://127.0.0.1:4222/${agentId}` }],
      load: { running_tasks: 0, max_concurrent_tasks: 4 },
      heartbeat_ms: Math.min(ttlMs, 1000),
      ttl_ms: ttlMs,
      started_at: now,
      updated_at: now,
    },
  };
}

/** The registry calls a view makes, its watch fed by the test: `known` is what the watch holds. */
function fakeRegistry() {
  const known = new Map<string, RegistryRecord>();
  let report!: (c: RegistryChange) => void;
  const registry = {
    async watch(onChange: (c: RegistryChange) => void) {
      report = onChange;
      return { ready: Promise.resolve(), current: () => [...known.values()], stop() {} };
    },
    async get(agentId: string) {
      return known.get(agentId);
    },
  } as unknown as Registry;
  const join = (r: RegistryRecord): void => {
    known.set(r.entry.agent_id, r);
    report({ kind: 'joined', agentId: r.entry.agent_id, record: r });
  };
  const withdraw = (agentId: string): void => {
    const last = known.get(agentId)!;
    known.delete(agentId);
    report({ kind: 'left', agentId, reason: 'withdrawn', record: last });
  };
  return { registry, join, withdraw };
}

describe('the requester’s view of the registry (spec: registry#discovery, registry#lifetime)', () => {
  it('answers in agent-id order, and again after every change the watch reports', async () => {
    const { registry, join, withdraw } = fakeRegistry();
    const view = await viewOf(registry);
    join(record('tap.c', 1));
    join(record('tap.a', 2));
    const query = { capability: 'tap.test.echo', binding: 'nats' as const };
    expect((await view.list(query)).map((e) => e.agent_id)).toEqual(['tap.a', 'tap.c']);
    join(record('tap.b', 3));
    expect((await view.list(query)).map((e) => e.agent_id)).toEqual(['tap.a', 'tap.b', 'tap.c']);
    // A changed load is a change too.
    const busier = record('tap.a', 4);
    busier.entry.load.running_tasks = 3;
    join(busier);
    expect((await view.list(query)).find((e) => e.agent_id === 'tap.a')?.load.running_tasks).toBe(3);
    // Withdrawn: gone from the answer.
    withdraw('tap.c');
    expect((await view.list(query)).map((e) => e.agent_id)).toEqual(['tap.a', 'tap.b']);
    // An answer is the caller's own: changing it changes no later answer.
    (await view.list(query)).length = 0;
    expect(await view.list(query)).toHaveLength(2);
    view.stop();
  });

  it('drops an entry whose lifetime has ended from the next answer, with no change reported', async () => {
    // The clock is the test's: Date.now() moves only when told to.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      const { registry, join } = fakeRegistry();
      const view = await viewOf(registry);
      join(record('tap.long', 1));
      join(record('tap.short', 2, 5_000));
      const query = { capability: 'tap.test.echo' };
      expect((await view.list(query)).map((e) => e.agent_id)).toEqual(['tap.long', 'tap.short']);
      vi.setSystemTime(Date.now() + 4_999);
      expect((await view.list(query)).map((e) => e.agent_id)).toEqual(['tap.long', 'tap.short']);
      vi.setSystemTime(Date.now() + 1);
      expect((await view.list(query)).map((e) => e.agent_id)).toEqual(['tap.long']);
      view.stop();
    } finally {
      vi.useRealTimers();
    }
  });
});
