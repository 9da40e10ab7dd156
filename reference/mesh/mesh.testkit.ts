/**
 * Test support for the mesh: a registry held in memory whose entries the test writes, marks
 * stale and withdraws, and agents served over a real NATS server that join it.
 */
import type { Capability } from '../../schemas/src/index.ts';
import {
  createAgent,
  withConformanceCapabilities,
  type Agent,
  type AgentListener,
  type CapabilityDefinition,
  type Handler,
} from '../agent/index.ts';
import type { TelemetryOptions } from '../telemetry.ts';
import { afterAll, beforeAll } from 'vitest';
import { scriptedCard } from '../client/scripted-agent.testkit.ts';
import { startNatsServer, type NatsServer } from '../transports/nats/nats-server.testkit.ts';
import { hostCard as testCard } from './agent-host.ts';
import { Mesh, type MeshOptions } from './mesh.ts';
import type { DiscoveryQuery, MeshEntry, MeshRegistry, RegistryChange } from './registry-view.ts';

/** A registry in memory: `list` filters by capability name and binding, `watch` sees every change. */
export class MemoryRegistry implements MeshRegistry {
  private readonly entries = new Map<string, () => MeshEntry>();
  private readonly listeners = new Set<(c: RegistryChange) => void>();

  /** Writes an entry; `entry` is read anew on every list, so load figures stay current. */
  put(entry: () => MeshEntry): void {
    const e = entry();
    this.entries.set(e.agent_id, entry);
    for (const fn of this.listeners) fn({ kind: 'live', entry: e });
  }

  /** Removes an entry as its lifetime passing would. */
  expire(agentId: string): void {
    if (!this.entries.delete(agentId)) return;
    for (const fn of this.listeners) fn({ kind: 'stale', agentId });
  }

  /** Removes an entry as its agent's withdrawal would. */
  withdraw(agentId: string): void {
    if (!this.entries.delete(agentId)) return;
    for (const fn of this.listeners) fn({ kind: 'withdrawn', agentId });
  }

  async list(query?: DiscoveryQuery): Promise<MeshEntry[]> {
    const all = [...this.entries.values()].map((f) => f());
    if (!query) return all;
    return all.filter(
      (e) =>
        (query.capability === undefined || e.card.capabilities.some((c) => c.name === query.capability)) &&
        (query.binding === undefined || e.endpoints.some((p) => p.binding === query.binding)),
    );
  }

  async watch(fn: (c: RegistryChange) => void): Promise<() => void> {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}

/** An agent over NATS with its registry entry. */
export interface MeshTestAgent {
  agent: Agent;
  listener: AgentListener;
  entry(): MeshEntry;
}

/** Starts an agent with the conformance capabilities (and `extra`) serving through NATS at `url`. */
export async function startMeshAgent(
  url: string,
  agentId: string,
  extra: Record<string, Handler | CapabilityDefinition> = {},
  options: { maxConcurrentTasks?: number; stateDir?: string; telemetry?: TelemetryOptions } = {},
): Promise<MeshTestAgent> {
  const agent = createAgent({
    card: testCard(agentId, options.maxConcurrentTasks),
    capabilities: withConformanceCapabilities(extra),
    shutdownGraceMs: 500,
    heartbeatMs: 1000,
    ...(options.stateDir ? { stateDir: options.stateDir } : {}),
    ...(options.telemetry ? { telemetry: options.telemetry } : {}),
    logger: () => {},
  });
  const listener = await agent.listenNats({ url, keepaliveMs: 250 });
  const instance = Math.random().toString(36).slice(2);
  const started = new Date().toISOString();
  const entry = (): MeshEntry => ({
    agent_id: agentId,
    instance,
    card: agent.card,
    versions: ['1.0'],
    endpoints: [{ binding: 'nats', url: listener.url }],
    load: { running_tasks: agent.stats().activeTasks, max_concurrent_tasks: agent.card.limits.max_concurrent_tasks },
    heartbeat_ms: 200,
    ttl_ms: 600,
    started_at: started,
    updated_at: new Date().toISOString(),
  });
  return { agent, listener, entry };
}

/** A card entry for a test capability: version 1.0.0, JSON in and out, no streaming. */
export function testCapability(name: string, description: string, extra: Partial<Capability> = {}): Capability {
  return {
    name,
    version: '1.0.0',
    description,
    input_formats: ['json'],
    output_formats: ['json'],
    streaming: false,
    side_effects: false,
    ...extra,
  };
}

/**
 * One nats-server for a describe block, started before its tests and stopped after them with the
 * agents and meshes its tests made through `agent` and `mesh`.
 */
export function meshTestBed(): {
  url: () => string;
  /** The agents started so far, in order. */
  agents: readonly MeshTestAgent[];
  agent: (
    id: string,
    extra?: Record<string, Handler | CapabilityDefinition>,
    options?: Parameters<typeof startMeshAgent>[3],
  ) => Promise<MeshTestAgent>;
  mesh: (options: MeshOptions) => Mesh;
} {
  let server: NatsServer | undefined;
  const agents: MeshTestAgent[] = [];
  const meshes: Mesh[] = [];
  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterAll(async () => {
    for (const m of meshes) await m.close();
    for (const a of agents) await a.agent.shutdown('test over').catch(() => undefined);
    await server?.stop();
  });
  return {
    url: () => server!.url,
    agents,
    async agent(id, extra = {}, options = {}) {
      const a = await startMeshAgent(server!.url, id, extra, options);
      agents.push(a);
      return a;
    },
    mesh(options) {
      const m = new Mesh(options);
      meshes.push(m);
      return m;
    },
  };
}

/** A live registry entry of a scripted agent (the capabilities of scriptedCard), reached over NATS unless `extra` says otherwise. */
export function testEntry(agentId: string, extra: Partial<MeshEntry> = {}): MeshEntry {
  const now = new Date().toISOString();
  return {
    agent_id: agentId,
    instance: `${agentId}-1`,
    card: scriptedCard({ agent_id: agentId }),
    versions: ['1.0'],
    endpoints: [{ binding: 'nats', url: 'nats://127.0.0.1:1' }],
    load: { running_tasks: 0, max_concurrent_tasks: 4 },
    heartbeat_ms: 200,
    ttl_ms: 600,
    started_at: now,
    updated_at: now,
    ...extra,
  };
}
