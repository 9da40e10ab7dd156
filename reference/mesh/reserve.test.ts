/**
 * A copy counts in flight on its agent from the moment routing chose it (spec: mesh#routing,
 * TAP-MESH-003): submissions made together, before any session to the agents is open, spread by
 * load instead of all taking the agent that was least loaded when they began.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createAgent, type Agent } from '../agent/index.ts';
import { connectWith, type TapClient } from '../client/index.ts';
import { scriptedCard } from '../client/scripted-agent.testkit.ts';
import { createMemoryPair } from '../transports/index.ts';
import { Mesh } from './mesh.ts';
import type { MeshEntry } from './registry-view.ts';
import { MemoryRegistry, testEntry } from './mesh.testkit.ts';

const MAX = 4;
const CAPABILITY = 'demo.wait';

describe('copies counted from their routing (spec: mesh#routing, TAP-MESH-003)', () => {
  const cleanups: Array<() => Promise<unknown> | unknown> = [];
  afterEach(async () => {
    for (const fn of cleanups.splice(0).reverse()) await fn();
  });

  it('eight submissions made at once go by load: none is refused BUSY and moved', async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const agents = new Map<string, Agent>();
    const ids = ['agent-a', 'agent-b', 'agent-c', 'agent-d'];
    for (const id of ids) {
      const agent = createAgent({
        card: {
          agent_id: id,
          name: id,
          description: 'Holds each task until the test lets it end.',
          capabilities: [
            {
              name: CAPABILITY,
              version: '1.0.0',
              description: 'waits',
              side_effects: false,
              input_formats: ['application/json'],
              output_formats: ['application/json'],
              streaming: false,
            },
          ],
          limits: { max_concurrent_tasks: MAX, max_task_seconds: 60, max_message_bytes: 1048576 },
        },
        capabilities: { [CAPABILITY]: async () => (await gate, { by: id }) },
        logger: () => {},
      });
      agents.set(id, agent);
      cleanups.push(() => agent.shutdown());
    }
    const registry = new MemoryRegistry();
    // agent-a reports nothing running, the others half their room: agent-a is the least loaded.
    for (const id of ids) {
      const entry: MeshEntry = testEntry(id, {
        card: scriptedCard({
          agent_id: id,
          capabilities: [{ name: CAPABILITY, version: '1.0.0', description: 'waits', side_effects: false }],
        } as never),
        load: { running_tasks: id === 'agent-a' ? 0 : MAX / 2, max_concurrent_tasks: MAX },
        ttl_ms: 60_000,
      });
      registry.put(() => entry);
    }
    const connect = (e: MeshEntry): Promise<TapClient> =>
      connectWith(
        async () => {
          const [a, b] = createMemoryPair();
          agents.get(e.agent_id)!.attach(b);
          return a;
        },
        { agentId: 'coordinator', target: e.agent_id, reconnect: false },
      );
    const mesh = new Mesh({ registry, agentId: 'coordinator', connect });
    cleanups.push(() => mesh.close());

    const copies = await Promise.all(Array.from({ length: 8 }, () => mesh.task(CAPABILITY, {})));
    await Promise.all(copies.map((c) => c.accepted));
    open();
    const results = await Promise.all(copies.map((c) => c.result));
    expect(results.map((r) => r.status)).toEqual(Array(8).fill('completed'));
    // Each copy's first agent took it: no attempt was refused and moved.
    expect(copies.map((c) => c.hops.length)).toEqual(Array(8).fill(1));
    const perAgent = new Map<string, number>();
    for (const c of copies) perAgent.set(c.agentId!, (perAgent.get(c.agentId!) ?? 0) + 1);
    // agent-a first took two to come level with the others, then each took its turn: 3, 2 or 3 each.
    expect(perAgent.get('agent-a')).toBe(3);
    expect([...perAgent.values()].reduce((a, b) => a + b, 0)).toBe(8);
    expect(Math.max(...perAgent.values())).toBeLessThanOrEqual(3);
  });
});
