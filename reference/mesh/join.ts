/**
 * An agent joins a mesh through a narrow face of it: its card, where it accepts sessions, its load
 * and its lifetime. The membership (member.ts) reads the agent at every write and withdraws the
 * entry first when the agent shuts down (spec: registry#instances, registry#load,
 * registry#withdrawal); the agent itself knows nothing of meshes.
 */
import type { AgentCard } from '../../schemas/src/index.ts';
import { SUPPORTED_VERSIONS } from '../core/catalogue.ts';
import type { RegistryEndpoint } from './entry.ts';
import { joinMesh as joinRegistry, type MeshOptions, type Membership } from './member.ts';

/** What joining a mesh needs of an agent; reference/agent's `Agent` has it. */
export interface MeshAgent {
  readonly card: AgentCard;
  /** Where it accepts sessions now (spec: registry#entry, TAP-REG-004). */
  endpoints(): readonly RegistryEndpoint[];
  /** Its non-terminal tasks now (spec: registry#load, TAP-REG-006). */
  runningTasks(): number;
  /** Runs a hook first when its shutdown begins; throws once it has begun. */
  onShutdown(hook: () => Promise<void> | void): () => void;
}

/** Where the registry is, how often to renew the entry, and where the membership says what it does. */
export interface JoinMeshOptions extends MeshOptions {
  /** Receives the membership's lines (joined, a failed renewal, the entry taken by another process). */
  log?: (level: 'info' | 'warn', message: string) => void;
}

const members = new WeakMap<MeshAgent, Promise<Membership>>();

/**
 * Joins a mesh: keeps an entry with the agent's card, endpoints and load in the registry, renewed
 * every heartbeat, and withdraws it as the agent's shutdown begins (spec: registry). Needs a
 * listener (listen or listenNats) first, since an entry names where to reach the agent.
 */
export async function joinMesh(agent: MeshAgent, options: JoinMeshOptions): Promise<Membership> {
  const { log, ...meshOptions } = options;
  if (members.has(agent)) throw new Error('the agent is in a mesh already: leave it first (membership.leave())');
  if (agent.endpoints().length === 0)
    throw new Error('the agent accepts no sessions a requester could reach: call listen() or listenNats() before joinMesh(agent, …)');
  let joining: Promise<Membership> | undefined;
  let removeHook: () => void;
  try {
    // Registered before the join, so that a shutdown begun meanwhile still withdraws the entry it writes.
    removeHook = agent.onShutdown(async () => (await joining?.catch(() => undefined))?.leave());
  } catch {
    throw new Error('the agent is shutting down; it cannot join a mesh');
  }
  joining = joinRegistry(meshOptions, {
    card: agent.card,
    versions: SUPPORTED_VERSIONS,
    endpoints: () => [...agent.endpoints()],
    runningTasks: () => agent.runningTasks(),
    ...(log ? { log } : {}),
  });
  members.set(agent, joining);
  try {
    const membership = await joining;
    void membership.ended.then(() => {
      members.delete(agent);
      removeHook();
    });
    return membership;
  } catch (err) {
    members.delete(agent);
    removeHook();
    throw err;
  }
}
