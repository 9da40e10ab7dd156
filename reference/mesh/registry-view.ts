/**
 * What the requester side of the mesh needs of a registry: the live entries that match a
 * discovery query, and a watch that reports entries as they come, are withdrawn or turn stale
 * (spec: registry#discovery, registry#lifetime). Any registry that gives these two calls will do.
 */
import type { AgentCard } from '../../schemas/src/index.ts';

/** One endpoint of an entry (spec: registry#entry). */
export interface Endpoint {
  binding: string;
  url: string;
  prefix?: string;
}

/** A registry entry as the requester reads it (spec: registry#entry). */
export interface MeshEntry {
  agent_id: string;
  instance: string;
  card: AgentCard;
  versions: string[];
  endpoints: Endpoint[];
  load: { running_tasks: number; max_concurrent_tasks: number };
  heartbeat_ms: number;
  ttl_ms: number;
  started_at: string;
  updated_at: string;
}

/** A discovery query (spec: registry#discovery). */
export interface DiscoveryQuery {
  capability: string;
  /** A version range in the registry's notation (spec: registry#version-ranges). */
  version?: string;
  permissions?: string[];
  binding?: string;
}

/** A change the watch reports: an entry written, or gone by withdrawal or by lifetime. */
export type RegistryChange = { kind: 'live'; entry: MeshEntry } | { kind: 'withdrawn' | 'stale'; agentId: string; instance?: string };

/** The registry calls the Mesh uses. */
export interface MeshRegistry {
  /** The live entries matching `query` (all live entries without one). */
  list(query?: DiscoveryQuery): Promise<MeshEntry[]>;
  /** Calls `fn` for each change until the returned function is called. */
  watch(fn: (change: RegistryChange) => void): Promise<() => void>;
}
