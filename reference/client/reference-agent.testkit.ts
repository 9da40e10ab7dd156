/** What the client's tests against the reference agent runtime share: its card, clean-ups run after each test, and agents and clients in memory. */
import { afterEach } from 'vitest';
import type { AgentCard } from '../../schemas/src/index.ts';
import { createAgent, withConformanceCapabilities, type Agent, type AgentOptions } from '../agent/index.ts';
import { createMemoryPair } from '../transports/index.ts';
import { connect, type ConnectOptions, type WireEntry } from './index.ts';

/** The card of the reference agent runtime the client's tests serve the conformance capabilities with. */
export const REFERENCE_CARD: AgentCard = {
  agent_id: 'reference-agent',
  name: 'Reference agent',
  description: 'Runs the conformance capabilities.',
  capabilities: [],
  limits: { max_concurrent_tasks: 8, max_task_seconds: 60, max_message_bytes: 1048576 },
};

/** A list of clean-ups (agents to shut down, clients to close) run in reverse order after each test of the file. */
export function cleanupsAfterEach(): Array<() => Promise<unknown>> {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
  });
  return cleanups;
}

/**
 * Reference agents and in-memory clients for one test file, each closed after its test:
 * `agentWith` builds an agent with the conformance capabilities (and `defaults`), `overMemory`
 * connects a client to it and records the wire.
 */
export function inMemory(defaults: Partial<AgentOptions> = {}) {
  const cleanups = cleanupsAfterEach();
  function agentWith(options: Partial<AgentOptions> = {}): Agent {
    const agent = createAgent({
      card: REFERENCE_CARD,
      capabilities: withConformanceCapabilities(),
      logger: () => {},
      ...defaults,
      ...options,
    });
    cleanups.push(() => agent.shutdown());
    return agent;
  }
  async function overMemory(agent: Agent, options: Partial<ConnectOptions> = {}) {
    const [a, b] = createMemoryPair();
    agent.attach(b);
    const wire: WireEntry[] = [];
    const client = await connect(a, { agentId: 'test-requester', trace: (e) => wire.push(e), ...options });
    cleanups.push(() => client.close());
    return { client, wire };
  }
  return { cleanups, agentWith, overMemory };
}
