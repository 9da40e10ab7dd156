/**
 * What the requester side of the mesh needs of a registry: the live entries that match a
 * discovery query, and a watch that reports entries as they come, are withdrawn or turn stale
 * (spec: registry#discovery, registry#lifetime). `viewOf` gives both from the NATS registry,
 * answering queries from one watch kept open instead of reading the bucket for every task.
 */
import { compileQuery, matches, type CompiledQuery, type DiscoveryQuery, type RegistryEntry } from './entry.ts';
import type { Registry } from './registry.ts';

export type { DiscoveryQuery, RegistryEndpoint as Endpoint } from './entry.ts';

/** A registry entry as the requester reads it (spec: registry#entry). */
export type MeshEntry = RegistryEntry;

/** A change the view reports: an entry written, or gone by withdrawal or by lifetime. */
export type RegistryChange = { kind: 'live'; entry: MeshEntry } | { kind: 'withdrawn' | 'stale'; agentId: string; instance?: string };

/** The registry calls the Mesh uses. */
export interface MeshRegistry {
  /** The live entries matching `query` (all live entries without one). */
  list(query?: DiscoveryQuery): Promise<MeshEntry[]>;
  /** Calls `fn` for each change until the returned function is called. */
  watch(fn: (change: RegistryChange) => void): Promise<() => void>;
}

/** A view of the NATS registry: one watch, queries answered from what it holds (spec: registry#lifetime). */
export async function viewOf(registry: Registry): Promise<MeshRegistry & { stop(): void }> {
  const listeners = new Set<(c: RegistryChange) => void>();
  const compiled = new Map<string, CompiledQuery>();
  const watch = await registry.watch((change) => {
    let out: RegistryChange | undefined;
    // A refused write changes nothing the mesh routes by (spec: registry#signatures).
    if (change.kind === 'refused') return;
    if (change.kind === 'joined' || change.kind === 'updated') out = { kind: 'live', entry: change.record.entry };
    else if (change.reason === 'withdrawn') out = { kind: 'withdrawn', agentId: change.agentId, instance: change.record.entry.instance };
    // A new instance under the key: the old instance's sessions are gone with it (spec: registry#instances).
    else if (change.reason === 'restarted') out = { kind: 'stale', agentId: change.agentId, instance: change.record.entry.instance };
    else if (change.reason === 'expired') {
      // A busy requester may see the lifetime pass before it reads the renewal already waiting for
      // it: a direct read confirms the entry is stale before the agent is counted lost (TAP-REG-021).
      const instance = change.record.entry.instance;
      void registry.get(change.agentId).then(
        (fresh) => {
          if (fresh && fresh.entry.instance === instance) return;
          for (const fn of listeners) fn({ kind: 'stale', agentId: change.agentId, instance });
        },
        () => {
          for (const fn of listeners) fn({ kind: 'stale', agentId: change.agentId, instance });
        },
      );
    }
    if (out) for (const fn of listeners) fn(out);
  });
  await watch.ready;
  return {
    async list(query = {}) {
      const key = JSON.stringify(query);
      let c = compiled.get(key);
      if (!c) {
        c = compileQuery(query);
        if (compiled.size > 256) compiled.clear();
        compiled.set(key, c);
      }
      const now = Date.now();
      return watch
        .current()
        .filter((r) => matches(r, c, now))
        .map((r) => r.entry);
    },
    async watch(fn) {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
    stop: () => watch.stop(),
  };
}
