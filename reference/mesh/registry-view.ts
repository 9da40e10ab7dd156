/**
 * What the requester side of the mesh needs of a registry: the live entries that match a
 * discovery query, and a watch that reports entries as they come, are withdrawn or turn stale
 * (spec: registry#discovery, registry#lifetime). `viewOf` gives both from the NATS registry,
 * answering queries from one watch kept open instead of reading the bucket for every task.
 */
import { compileQuery, expiresAt, matches, type CompiledQuery, type DiscoveryQuery, type RegistryEntry } from './entry.ts';
import type { Registry } from './registry.ts';
import { textOrder } from '../core/text-order.ts';

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

/**
 * A query's answer as last computed: good while the watch reported no change since (`version`)
 * and no entry in it has reached the end of its lifetime (`until`).
 */
interface Answer {
  compiled: CompiledQuery;
  version: number;
  until: number;
  entries: MeshEntry[];
}

/**
 * A view of the NATS registry: one watch, queries answered from what it holds, each answer kept
 * until the watch reports a change or one of its entries expires; entries in agent-id order
 * (spec: registry#lifetime).
 */
export async function viewOf(registry: Registry): Promise<MeshRegistry & { stop(): void }> {
  const listeners = new Set<(c: RegistryChange) => void>();
  const answers = new Map<string, Answer>();
  let version = 0;
  const watch = await registry.watch((change) => {
    version++;
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
      let a = answers.get(key);
      if (!a) {
        if (answers.size > 256) answers.clear();
        a = { compiled: compileQuery(query), version: -1, until: 0, entries: [] };
        answers.set(key, a);
      }
      const now = Date.now();
      if (a.version !== version || now >= a.until) {
        const records = watch.current().filter((r) => matches(r, a!.compiled, now));
        records.sort((x, y) => textOrder(x.entry.agent_id, y.entry.agent_id));
        a.entries = records.map((r) => r.entry);
        a.until = records.reduce((until, r) => Math.min(until, expiresAt(r)), Number.POSITIVE_INFINITY);
        a.version = version;
      }
      return a.entries.slice();
    },
    async watch(fn) {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
    stop: () => watch.stop(),
  };
}
