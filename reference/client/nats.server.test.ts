import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, withConformanceCapabilities, type Agent } from '../agent/index.ts';
import type { AgentCard } from '../../schemas/src/index.ts';
import { NO_NATS_SERVER, natsServerInstalled, startNatsServer, type NatsServer } from '../transports/nats/nats-server.testkit.ts';
import { connectNats, type TapClient, type WireEntry } from './index.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

const card: AgentCard = {
  agent_id: 'tap.nats-test-agent',
  name: 'nats test agent',
  description: 'An agent that serves the conformance capabilities over NATS in tests.',
  capabilities: [],
  limits: { max_concurrent_tasks: 8, max_task_seconds: 60, max_message_bytes: 1048576 },
};

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
});

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'client ↔ reference agent over NATS (spec: bindings-nats)'), () => {
  let server: NatsServer;
  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  async function serve(agentId = card.agent_id): Promise<Agent> {
    const agent = createAgent({ card: { ...card, agent_id: agentId }, capabilities: withConformanceCapabilities(), logger: () => {} });
    cleanups.push(() => agent.shutdown());
    await agent.listenNats({ url: server.url, keepaliveMs: 100 });
    return agent;
  }

  async function client(agentId = card.agent_id, trace?: (e: WireEntry) => void): Promise<TapClient> {
    const c = await connectNats(server.url, {
      agentId: 'test.requester',
      target: agentId,
      reconnect: { baseMs: 20, maxMs: 200 },
      nats: { keepaliveMs: 100 },
      ...(trace ? { trace } : {}),
    });
    cleanups.push(() => c.close());
    return c;
  }

  it('opens a session and round-trips tap.test.echo through the server', async () => {
    await serve();
    const c = await client();
    expect(c.handshake.agentId).toBe(card.agent_id);
    expect(await c.submit('tap.test.echo', { text: 'over nats' }).result).toEqual({ status: 'completed', output: { text: 'over nats' } });
  });

  it('opens its session under its own id, to the agent named by target or by the URL (spec: bindings-nats#opening)', async () => {
    await serve();
    const sources: string[] = [];
    const trace = (e: WireEntry) => {
      if (e.dir === 'out') sources.push((JSON.parse(e.text) as { source: string }).source);
    };
    const byTarget = await client(card.agent_id, trace);
    expect(byTarget.handshake.agentId).toBe(card.agent_id);
    const byUrl = await connectNats(`${server.url}/${card.agent_id}`, {
      agentId: 'test.other-requester',
      nats: { keepaliveMs: 100 },
      trace,
    });
    cleanups.push(() => byUrl.close());
    expect(byUrl.handshake.agentId).toBe(card.agent_id);
    expect(new Set(sources)).toEqual(new Set(['test.requester', 'test.other-requester']));
    await expect(connectNats(server.url, { agentId: 'test.requester' })).rejects.toThrow(/names no agent.*target/);
  });

  it('resumes after the agent side of the connection is dropped mid-stream: no event lost or repeated (resume#reconnect)', async () => {
    const agentId = 'tap.nats-resume-agent';
    const agent = createAgent({ card: { ...card, agent_id: agentId }, capabilities: withConformanceCapabilities(), logger: () => {} });
    cleanups.push(() => agent.shutdown());
    const { createNatsListener } = await import('../transports/nats/index.ts');
    const transports: Array<{ terminate(): void }> = [];
    const listener = await createNatsListener({
      url: server.url,
      agentId,
      keepaliveMs: 100,
      maxFrameBytes: 2 * 1048576,
      onSession: (t) => {
        transports.push(t);
        agent.attach(t);
      },
    });
    cleanups.push(() => listener.close());
    const c = await client(agentId);
    const reconnected = new Promise<{ resumed: boolean }>((r) => c.on('reconnected', r));
    const h = c.submit('tap.test.stream', { count: 20, interval_ms: 15 });
    const indexes: number[] = [];
    for await (const e of h.events) {
      const p = e.payload as { kind?: string; data?: { index?: number } };
      if (p.kind === 'output') indexes.push(p.data!.index!);
      if (indexes.length === 5 && transports.length === 1) transports[0]!.terminate();
    }
    expect((await reconnected).resumed).toBe(true);
    expect(await h.result).toEqual({ status: 'completed', output: { count: 20 } });
    expect(transports).toHaveLength(2);
    expect(indexes).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });
});
