import { describe, expect, it } from 'vitest';
import { createAgent, withConformanceCapabilities } from '../agent/index.ts';
import { sampleCard } from '../core/samples.testkit.ts';
import { joinMesh, type MeshAgent } from './join.ts';

/** An agent face with one endpoint whose shutdown hooks the test runs. */
function face(): MeshAgent & { hooks: Set<() => Promise<void> | void>; stopping: boolean } {
  const hooks = new Set<() => Promise<void> | void>();
  const agent = {
    card: sampleCard('mesh.face'),
    hooks,
    stopping: false,
    endpoints: () => [{ binding: 'websocket' as const, url: 'ws://127.0.0.1:1/tap' }],
    runningTasks: () => 0,
    onShutdown(hook: () => Promise<void> | void) {
      if (agent.stopping) throw new Error('the agent is shutting down');
      hooks.add(hook);
      return () => void hooks.delete(hook);
    },
  };
  return agent;
}

describe('joinMesh(agent, options) over the agent face (spec: registry)', () => {
  it('refuses an agent without listeners and one whose shutdown has begun, before connecting anywhere', async () => {
    const quiet = createAgent({
      card: sampleCard('mesh.quiet'),
      capabilities: withConformanceCapabilities(),
      logger: () => {},
      env: false,
      signals: false,
    });
    await expect(joinMesh(quiet, { url: 'nats://127.0.0.1:1' })).rejects.toThrow(/accepts no sessions a requester could reach/);
    await quiet.shutdown();
    const stopping = face();
    stopping.stopping = true;
    await expect(joinMesh(stopping, { url: 'nats://127.0.0.1:1' })).rejects.toThrow(/shutting down; it cannot join/);
  });

  it('refuses a second join while one is under way, and leaves no shutdown hook behind when the join fails', async () => {
    const agent = face();
    // Port 1 of the loopback: nothing listens there, so the connection is refused at once.
    const url = 'nats://127.0.0.1:1';
    const first = joinMesh(agent, { url });
    await expect(joinMesh(agent, { url })).rejects.toThrow(/in a mesh already/);
    expect(agent.hooks.size).toBe(1);
    await expect(first).rejects.toThrow(/could not connect to the mesh's NATS server/);
    expect(agent.hooks.size).toBe(0);
    // Once the failed join is over, the agent may try again.
    await expect(joinMesh(agent, { url })).rejects.toThrow(/could not connect/);
  });
});

describe("the agent's face for a mesh", () => {
  it('lists an endpoint per open listener, counts running tasks, and runs shutdown hooks before the sessions end', async () => {
    const agent = createAgent({
      card: sampleCard('mesh.face'),
      capabilities: withConformanceCapabilities(),
      logger: () => {},
      env: false,
      signals: false,
    });
    expect(agent.endpoints()).toEqual([]);
    expect(agent.runningTasks()).toBe(0);
    const listener = await agent.listen({ host: '127.0.0.1', port: 0 });
    expect(agent.endpoints()).toEqual([{ binding: 'websocket', url: listener.url }]);
    const order: string[] = [];
    agent.onShutdown(async () => {
      order.push(`hook: ${agent.endpoints().length} endpoint`);
    });
    const removed = agent.onShutdown(() => void order.push('removed hook'));
    removed();
    void agent.stopped.then(() => order.push('stopped'));
    await agent.shutdown();
    await agent.stopped;
    expect(order).toEqual(['hook: 1 endpoint', 'stopped']);
    expect(() => agent.onShutdown(() => {})).toThrow(/shutting down/);
  });
});

describe('connectMesh', () => {
  it('refuses options without agentId before connecting anywhere, naming the option', async () => {
    const { connectMesh } = await import('./connect.ts');
    for (const options of [{}, undefined])
      await expect(connectMesh('nats://127.0.0.1:1', options as never)).rejects.toThrow(
        new TypeError(`connectMesh needs options.agentId, this requester's id (such as "my.coordinator"): the source of all it sends`),
      );
    await expect(connectMesh('http://127.0.0.1:1', { agentId: 'my.coordinator' })).rejects.toThrow(
      new TypeError(
        '"http://127.0.0.1:1" is not a NATS URL; give one like nats://127.0.0.1:4222 (the server), or nats://127.0.0.1:4222/my.agent where an agent is named',
      ),
    );
  });
});

describe("the mesh's pooled sessions", () => {
  it('reconnect 3 times 100–400 ms apart by default, and as MeshOptions.reconnect says when given', async () => {
    const { sessionOptions } = await import('./pool.ts');
    expect(sessionOptions({ requesterId: 'r.q' }, 'a.b').reconnect).toEqual({ attempts: 3, baseMs: 100, maxMs: 400 });
    expect(sessionOptions({ requesterId: 'r.q', reconnect: { attempts: 30, maxMs: 1000 } }, 'a.b')).toMatchObject({
      agentId: 'r.q',
      target: 'a.b',
      reconnect: { attempts: 30, baseMs: 100, maxMs: 1000 },
    });
  });
});

describe('a mesh task no NATS endpoint can take', () => {
  it('names the agents that offer the capability with no NATS endpoint, and sends nothing', async () => {
    const [{ Mesh }, { MemoryRegistry, testEntry }] = await Promise.all([import('./mesh.ts'), import('./mesh.testkit.ts')]);
    const registry = new MemoryRegistry();
    registry.put(() => testEntry('ws.only', { endpoints: [{ binding: 'websocket', url: 'ws://127.0.0.1:1/tap' }] }));
    let opened = 0;
    const mesh = new Mesh({ registry, agentId: 'coordinator', connect: async () => (opened++, Promise.reject(new Error('no'))) });
    try {
      await expect(mesh.task('demo.echo', {})).rejects.toMatchObject({
        code: 'CAPABILITY_NOT_SUPPORTED',
        message: expect.stringMatching(/; ws\.only offers it with no NATS endpoint, and the mesh routes over NATS; nothing was sent$/),
      });
      expect(opened).toBe(0);
    } finally {
      await mesh.close();
    }
  });
});
