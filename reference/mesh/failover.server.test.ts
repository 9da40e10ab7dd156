/**
 * A submission whose chosen agent crashed while its registry entry is still listed: no session
 * opens, nothing is sent, so the copy goes to the next candidate whatever its side effects, the
 * crashed agent is routed to last until its entry is renewed or goes, and when no agent answers
 * the error names the capability and the agents tried (spec: mesh#moving, TAP-MESH-024,
 * TAP-MESH-025).
 */
import { describe, expect, it } from 'vitest';
import { connect } from '@nats-io/transport-node';
import { TapClientError } from '../client/index.ts';
import { natsServerInstalled, NO_NATS_SERVER } from '../transports/nats/nats-server.testkit.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';
import { MemoryRegistry, meshTestBed, startMeshAgent } from './mesh.testkit.ts';
import { natsConnector } from './pool.ts';
import type { MeshEntry } from './registry-view.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'mesh fail-over past a crashed agent (spec: mesh#moving)'), () => {
  const bed = meshTestBed();

  /**
   * An agent that served on a NATS connection of its own, which then ends without a word, as when
   * its process is killed with SIGKILL: its entry, written while it ran, is what the registry still
   * lists (fixed: nobody renews it), reporting no load so that routing prefers it.
   */
  async function crashed(id: string): Promise<MeshEntry> {
    const nc = await connect({ servers: bed.url() });
    const a = await startMeshAgent(bed.url(), id, {}, {});
    // Serve this agent's sessions on its own connection, then drop that connection abruptly.
    await a.listener.close();
    const own = await a.agent.listenNats({ nc, keepaliveMs: 250 });
    const entry: MeshEntry = {
      ...a.entry(),
      endpoints: [{ binding: 'nats', url: own.url }],
      load: { running_tasks: 0, max_concurrent_tasks: 16 },
    };
    await nc.close();
    await a.agent.shutdown('crashed').catch(() => undefined);
    return entry;
  }

  /** A connector that counts the sessions opened per agent. */
  function counting(): { opened: string[]; connect: ReturnType<typeof natsConnector> } {
    const opened: string[] = [];
    const inner = natsConnector({ requesterId: 'fo.coordinator' });
    return { opened, connect: (e) => (opened.push(e.agent_id), inner(e)) };
  }

  it('moves a copy with side effects past a crashed, still-listed agent, as attempt 1, and routes later copies to it last (TAP-MESH-024, TAP-MESH-025)', async () => {
    const registry = new MemoryRegistry();
    const ghost = await crashed('fo.ghost');
    const live = await bed.agent('fo.live');
    registry.put(() => ghost);
    registry.put(() => ({ ...live.entry(), load: { running_tasks: 3, max_concurrent_tasks: 16 } }));
    const c = counting();
    const m = bed.mesh({ registry, agentId: 'fo.coordinator', connect: c.connect });

    // tap.test.counter has side effects: only a copy of which nothing was sent may move.
    const first = await m.task('tap.test.counter', { key: 'fo-1' }, { idempotencyKey: 'fo-key-1' });
    const result = await first.result;
    expect(result).toMatchObject({ status: 'completed', output: { key: 'fo-1', count: 1 } });
    expect(first.hops.map((h) => [h.agentId, h.attempt])).toEqual([['fo.live', 1]]);
    expect(c.opened).toEqual(['fo.ghost', 'fo.live']);

    // The ghost still reports the least load, but routing now tries the live agent first.
    const second = await m.task('tap.test.counter', { key: 'fo-2' });
    expect((await second.result).status).toBe('completed');
    expect(second.hops.map((h) => h.agentId)).toEqual(['fo.live']);
    expect(c.opened).toEqual(['fo.ghost', 'fo.live']);

    // A renewed entry lifts the doubt: the agent is tried again, and the copy moves once more.
    registry.put(() => ({ ...ghost, updated_at: new Date(Date.now() + 1000).toISOString() }));
    const third = await m.task('tap.test.counter', { key: 'fo-3' });
    expect((await third.result).status).toBe('completed');
    expect(third.hops.map((h) => h.agentId)).toEqual(['fo.live']);
    expect(c.opened).toEqual(['fo.ghost', 'fo.live', 'fo.ghost']);
  });

  it('ends a copy no agent answers unsent, with an error that names the capability and every agent tried (TAP-MESH-024)', async () => {
    const registry = new MemoryRegistry();
    const one = await crashed('fo.gone-1');
    registry.put(() => one);
    // An entry planted for an agent that never listened: nobody answers its subject.
    registry.put(() => ({
      ...one,
      agent_id: 'fo.gone-2',
      instance: 'never',
      endpoints: [{ binding: 'nats', url: `${bed.url()}/fo.gone-2` }],
    }));
    const c = counting();
    const m = bed.mesh({ registry, agentId: 'fo.coordinator', connect: c.connect, unreachedWaitMs: 300 });
    const t = await m.task('tap.test.counter', { key: 'fo-none' });
    const err = (await t.result.catch((e: unknown) => e)) as TapClientError;
    expect(err).toBeInstanceOf(TapClientError);
    expect(err).toMatchObject({ code: 'UNREACHABLE', unsent: true, indeterminate: false });
    expect(err.message).toMatch(
      /^no agent that offers tap\.test\.counter answered: no session could be opened to fo\.gone-\d, fo\.gone-\d \(last: could not connect to .*nobody answers/,
    );
    expect(err.message).toContain('nothing was sent');
    expect(t.hops).toEqual([]);
    // Each candidate once, though the copy waited for discovery to list another.
    expect(c.opened.sort()).toEqual(['fo.gone-1', 'fo.gone-2']);
  });

  it('waits, within its bound, for discovery to list a live agent when every agent listed so far is down (TAP-MESH-024)', async () => {
    // As a registry view refilling after a reconnect lists the crashed agents' entries before the live ones.
    const registry = new MemoryRegistry();
    const ghost = await crashed('fo.early');
    const late = await bed.agent('fo.late');
    registry.put(() => ghost);
    const m = bed.mesh({ registry, agentId: 'fo.coordinator', unreachedWaitMs: 20_000 });
    const t = await m.task('tap.test.counter', { key: 'fo-late' });
    setTimeout(() => registry.put(late.entry), 200);
    expect(await t.result).toMatchObject({ status: 'completed', output: { key: 'fo-late', count: 1 } });
    expect(t.hops.map((h) => [h.agentId, h.attempt])).toEqual([['fo.late', 1]]);
  });
});
