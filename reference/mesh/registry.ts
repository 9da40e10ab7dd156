/**
 * The registry on NATS: the key-value bucket TAP_REGISTRY, one key per agent id, holding the
 * entry's JSON text (spec: registry#nats). Agents create, update and withdraw their own entry
 * against the revision they last wrote; requesters get, list and watch, judging liveness by each
 * entry's server write time and ttl_ms, never by the bucket's max_age (spec: registry#lifetime).
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { KV, KvEntry } from '@nats-io/kv';
import { Kvm } from '../transports/nats/client.ts';
import {
  compileQuery,
  expiresAt,
  isLive,
  matches,
  parseEntry,
  type DiscoveryQuery,
  type RegistryEntry,
  type RegistryRecord,
} from './entry.ts';

/** The bucket's name (spec: registry#nats, TAP-REG-039). */
export const REGISTRY_BUCKET = 'TAP_REGISTRY';
/** The bucket's max_age when this module creates it (spec: registry#nats, TAP-REG-042). */
export const DEFAULT_BUCKET_MAX_AGE_MS = 60_000;

/** Options of `openRegistry`. */
export interface OpenRegistryOptions {
  /** The bucket (default TAP_REGISTRY). */
  bucket?: string;
  /** Create the bucket when it is missing (default true). */
  create?: boolean;
  /** The max_age of a bucket created here, in ms (default 60 000). */
  maxAgeMs?: number;
}

/** A change seen by a watch (spec: registry#lifetime). */
export type RegistryChange =
  | { kind: 'joined'; agentId: string; record: RegistryRecord }
  | { kind: 'updated'; agentId: string; record: RegistryRecord }
  | {
      kind: 'left';
      agentId: string;
      /** withdrawn: deleted; expired: its lifetime passed unrenewed; restarted: a new instance took the key; unmatched: it no longer matches the query. */
      reason: 'withdrawn' | 'expired' | 'restarted' | 'unmatched';
      /** The last live record seen. */
      record: RegistryRecord;
    };

/** A running watch. */
export interface RegistryWatch {
  /** Resolves once the entries that were live when the watch began have been reported. */
  readonly ready: Promise<void>;
  /** The live matching records as the watch sees them now. */
  current(): RegistryRecord[];
  stop(): void;
}

/** The registry on one NATS connection. */
export interface Registry {
  readonly bucket: string;
  /** The bucket's max_age in ms (0: none); an agent's ttl_ms may not exceed it (TAP-REG-041). */
  readonly maxAgeMs: number;
  /** One agent's record, or undefined when absent, invalid or (unless includeStale) stale. */
  get(agentId: string, options?: { includeStale?: boolean }): Promise<RegistryRecord | undefined>;
  /** Every live record matching the query (spec: registry#discovery); throws on an unreadable range. */
  list(query?: DiscoveryQuery): Promise<RegistryRecord[]>;
  /** Reports live matching records as they join, change and leave, expiry included (TAP-REG-023). */
  watch(onChange: (change: RegistryChange) => void, query?: DiscoveryQuery): Promise<RegistryWatch>;
  /** The revision of the key's last write, whatever it holds (a value, an invalid one, a delete); undefined when none. */
  lastRevision(agentId: string): Promise<number | undefined>;
  /** Writes a new entry under an empty key; resolves with its revision, rejects when the key holds one. */
  create(entry: RegistryEntry): Promise<number>;
  /** Writes an entry only if the key's last write is `revision` (spec: registry#instances, TAP-REG-012). */
  update(entry: RegistryEntry, revision: number): Promise<number>;
  /** Deletes an entry (a DEL marker) only if the key's last write is `revision` (TAP-REG-027, TAP-REG-043). */
  withdraw(agentId: string, revision: number): Promise<void>;
}

const encoder = new TextEncoder();

/** A record from a key-value entry, or undefined for a delete or an invalid value (TAP-REG-008). */
export function recordOf(e: KvEntry): RegistryRecord | undefined {
  if (e.operation !== 'PUT') return undefined;
  let value: unknown;
  try {
    value = e.json();
  } catch {
    return undefined;
  }
  const entry = parseEntry(value);
  // spec: registry#nats, TAP-REG-039: an entry under another key than its agent id is not valid.
  if (!entry || entry.agent_id !== e.key) return undefined;
  // spec: registry#nats, TAP-REG-040: the write time is the server's stamp.
  return { entry, revision: e.revision, writtenAt: e.created };
}

/** Opens (and unless told otherwise creates) the registry bucket on a NATS connection (spec: registry#nats). */
export async function openRegistry(nc: NatsConnection, options: OpenRegistryOptions = {}): Promise<Registry> {
  const bucket = options.bucket ?? REGISTRY_BUCKET;
  const kvm = new Kvm(nc);
  let kv: KV;
  let maxAgeMs: number;
  try {
    kv = await kvm.open(bucket);
    maxAgeMs = (await kv.status()).ttl;
  } catch (err) {
    if (options.create === false || !/not found/i.test((err as Error).message))
      throw new Error(`cannot open the registry bucket ${bucket}: ${(err as Error).message}`, { cause: err });
    maxAgeMs = options.maxAgeMs ?? DEFAULT_BUCKET_MAX_AGE_MS;
    kv = await kvm.create(bucket, { history: 1, ttl: maxAgeMs });
  }
  return new NatsRegistry(kv, bucket, maxAgeMs);
}

class NatsRegistry implements Registry {
  constructor(
    private readonly kv: KV,
    readonly bucket: string,
    readonly maxAgeMs: number,
  ) {}

  async get(agentId: string, options: { includeStale?: boolean } = {}): Promise<RegistryRecord | undefined> {
    const e = await this.kv.get(agentId);
    const record = e ? recordOf(e) : undefined;
    if (!record) return undefined;
    return options.includeStale || isLive(record) ? record : undefined;
  }

  async list(query: DiscoveryQuery = {}): Promise<RegistryRecord[]> {
    const compiled = compileQuery(query);
    const keys: string[] = [];
    for await (const k of await this.kv.keys()) keys.push(k);
    const records = await Promise.all(keys.map((k) => this.kv.get(k).then((e) => (e ? recordOf(e) : undefined))));
    const now = Date.now();
    return records.filter((r): r is RegistryRecord => r !== undefined && matches(r, compiled, now));
  }

  async watch(onChange: (change: RegistryChange) => void, query: DiscoveryQuery = {}): Promise<RegistryWatch> {
    const compiled = compileQuery(query);
    const known = new Map<string, { record: RegistryRecord; timer: NodeJS.Timeout }>();
    let stopped = false;
    const forget = (agentId: string): RegistryRecord | undefined => {
      const k = known.get(agentId);
      if (!k) return undefined;
      clearTimeout(k.timer);
      known.delete(agentId);
      return k.record;
    };
    const track = (record: RegistryRecord): NodeJS.Timeout =>
      // spec: registry#lifetime, TAP-REG-023: a lifetime that passes unrenewed is a departure, notice or not.
      setTimeout(
        () => {
          const k = known.get(record.entry.agent_id);
          if (stopped || !k || k.record.revision !== record.revision) return;
          known.delete(record.entry.agent_id);
          onChange({ kind: 'left', agentId: record.entry.agent_id, reason: 'expired', record });
        },
        Math.max(0, expiresAt(record) - Date.now()),
      ).unref();
    const seen = (e: KvEntry): void => {
      const agentId = e.key;
      const record = recordOf(e);
      const before = known.get(agentId)?.record;
      if (!record || !matches(record, compiled)) {
        const last = forget(agentId);
        if (last) {
          onChange({ kind: 'left', agentId, reason: e.operation === 'PUT' ? 'unmatched' : 'withdrawn', record: last });
        }
        return;
      }
      if (before && before.entry.instance !== record.entry.instance) {
        forget(agentId);
        onChange({ kind: 'left', agentId, reason: 'restarted', record: before });
      }
      const stillKnown = known.has(agentId);
      forget(agentId);
      known.set(agentId, { record, timer: track(record) });
      onChange({ kind: stillKnown ? 'updated' : 'joined', agentId, record });
    };

    let markReady!: () => void;
    const ready = new Promise<void>((resolve) => (markReady = resolve));
    const initial = (await this.kv.status()).values;
    const iterator = await this.kv.watch({ key: '>' });
    if (initial === 0) markReady();
    // An initial value that aged out before the watch began never arrives: look again now and then.
    const recheck = setInterval(() => {
      void this.kv.status().then(
        (s) => s.values === 0 && markReady(),
        () => {},
      );
    }, 250).unref();
    void ready.then(() => clearInterval(recheck));
    void (async () => {
      for await (const e of iterator) {
        if (stopped) break;
        seen(e);
        if (e.delta === 0) markReady();
      }
    })().catch(() => {});
    return {
      ready,
      current: () => [...known.values()].map((k) => k.record).filter((r) => isLive(r)),
      stop: () => {
        stopped = true;
        clearInterval(recheck);
        for (const id of [...known.keys()]) forget(id);
        iterator.stop();
        markReady();
      },
    };
  }

  async lastRevision(agentId: string): Promise<number | undefined> {
    return (await this.kv.get(agentId))?.revision;
  }

  create(entry: RegistryEntry): Promise<number> {
    return this.kv.create(entry.agent_id, encoder.encode(JSON.stringify(entry)));
  }

  update(entry: RegistryEntry, revision: number): Promise<number> {
    return this.kv.update(entry.agent_id, encoder.encode(JSON.stringify(entry)), revision);
  }

  async withdraw(agentId: string, revision: number): Promise<void> {
    await this.kv.delete(agentId, { previousSeq: revision });
  }
}
