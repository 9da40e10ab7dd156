/**
 * Quiet copies (spec: mesh#quiet-copies): a submission that asks for the outcome only makes each
 * attempt a quiet task where its hop's session negotiated TAP 1.1, so the hop costs the request
 * and its task.result; a hop of 1.0 gets the full stream.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createAgent, withConformanceCapabilities } from '../agent/index.ts';
import { connectWith, type TapClient } from '../client/index.ts';
import { scriptedCard } from '../client/scripted-agent.testkit.ts';
import { createMemoryPair } from '../transports/index.ts';
import { Mesh } from './mesh.ts';
import type { MeshEntry } from './registry-view.ts';
import { MemoryRegistry, testEntry } from './mesh.testkit.ts';

const AGENT = 'tap.quiet-hop';

function entry(): MeshEntry {
  return testEntry(AGENT, {
    card: scriptedCard({
      agent_id: AGENT,
      capabilities: [{ name: 'tap.test.echo', version: '1.0.0', description: 'echo', side_effects: false }],
    } as never),
    versions: ['1.1', '1.0'],
    ttl_ms: 60_000,
  });
}

describe('quiet copies (spec: mesh#quiet-copies)', () => {
  const cleanups: Array<() => Promise<unknown> | unknown> = [];
  afterEach(async () => {
    for (const fn of cleanups.splice(0).reverse()) await fn();
  });

  async function meshTo(versions: string[]): Promise<{ mesh: Mesh; sent: string[] }> {
    const agent = createAgent({
      card: {
        agent_id: AGENT,
        name: 'quiet hop',
        description: 'The reference agent as one hop.',
        capabilities: [],
        limits: { max_concurrent_tasks: 4, max_task_seconds: 60, max_message_bytes: 1048576 },
      },
      capabilities: withConformanceCapabilities(),
      logger: () => {},
    });
    cleanups.push(() => agent.shutdown());
    const connect = async (e: MeshEntry): Promise<TapClient> =>
      connectWith(
        async () => {
          const [a, b] = createMemoryPair();
          // Every message the agent sends on the hop, by type.
          const send = b.send.bind(b);
          b.send = (text: string) => (sent.push((JSON.parse(text) as { type: string }).type), send(text));
          agent.attach(b);
          return a;
        },
        { agentId: 'coordinator', target: e.agent_id, versions, reconnect: false },
      );
    const sent: string[] = [];
    const registry = new MemoryRegistry();
    registry.put(entry);
    const mesh = new Mesh({ registry, agentId: 'coordinator', connect });
    cleanups.push(() => mesh.close());
    return { mesh, sent };
  }

  it('over a hop of 1.1 the copy is quiet: the agent sends its task.result and nothing before it', async () => {
    const { mesh, sent } = await meshTo(['1.1', '1.0']);
    const copy = await mesh.task('tap.test.echo', { hello: 'mesh' }, { quiet: true });
    await expect(copy.result).resolves.toMatchObject({ status: 'completed', output: { hello: 'mesh' } });
    expect(sent.filter((t) => t.startsWith('task.'))).toEqual(['task.result']);
  });

  it('over a hop of 1.0 the same submission gets the full stream, opened by task.accepted', async () => {
    const { mesh, sent } = await meshTo(['1.0']);
    const copy = await mesh.task('tap.test.echo', { hello: 'mesh' }, { quiet: true });
    await expect(copy.result).resolves.toMatchObject({ status: 'completed' });
    expect(sent.filter((t) => t.startsWith('task.'))).toEqual(['task.accepted', 'task.event', 'task.result']);
  });
});
