/**
 * The registry on NATS: the key-value bucket TAP_REGISTRY, one key per agent id, holding the
 * entry's JSON text (spec: registry#nats). Agents create, update and withdraw their own entry
 * against the revision they last wrote; requesters get, list and watch, judging liveness by each
 * entry's server write time and ttl_ms, never by the bucket's max_age (spec: registry#lifetime).
 * The bucket is created with bounds, listings stop at theirs (spec: registry#bounds), and a
 * reader holding a trust file takes only entries signed by their agent (spec: registry#signatures).
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { KV, KvEntry } from '@nats-io/kv';
import { DiscardPolicy, jetstreamManager, Kvm, RetentionPolicy, StorageType } from '../transports/nats/client.ts';
import { replicasFor } from '../transports/nats/replicas.ts';
import { kvSubject, Wildcard } from '../transports/nats/subjects.ts';
import type { TrustFile } from '../trust.ts';
import {
  compileQuery,
  expiresAt,
  isLive,
  MAX_ENTRY_BYTES,
  matches,
  type DiscoveryQuery,
  type RegistryEntry,
  type RegistryRecord,
} from './entry.ts';
import {
  DEFAULT_LISTING_BOUNDS,
  endOfBucket,
  followBucket,
  listBucket,
  readingOf,
  readKeys,
  type Listing,
  type ListingBounds,
  type Refusal,
} from './listing.ts';

export type { Listing, ListingBounds, Refusal } from './listing.ts';

/** The bucket's name (spec: registry#nats, TAP-REG-039). */
export const REGISTRY_BUCKET = 'TAP_REGISTRY';
/** The bucket's max_age when this module creates it (spec: registry#nats, TAP-REG-042). */
export const DEFAULT_BUCKET_MAX_AGE_MS = 60_000;

/** The bounds of a registry bucket: the largest value, the most values and the most bytes (spec: registry#nats, TAP-REG-057). */
export interface BucketLimits {
  maxValueSize: number;
  maxValues: number;
  maxBytes: number;
}

const encoder = new TextEncoder();

/** The bounds of a bucket created here unless told otherwise (spec: registry#bounds). */
export const DEFAULT_BUCKET_LIMITS: BucketLimits = { maxValueSize: MAX_ENTRY_BYTES, maxValues: 10_000, maxBytes: 64 * 1024 * 1024 };

/** Options of `openRegistry`. */
export interface OpenRegistryOptions {
  /** The bucket (default TAP_REGISTRY). */
  bucket?: string;
  /** Create the bucket when it is missing (default true). */
  create?: boolean;
  /** The max_age of a bucket created here, in ms (default 60 000). */
  maxAgeMs?: number;
  /** The bounds of a bucket created here (default DEFAULT_BUCKET_LIMITS). */
  limits?: Partial<BucketLimits>;
  /** The replicas of a bucket created here (default: three on a cluster of three servers or more, one on a single server; TAP-REG-065). */
  replicas?: number;
  /** Take only entries signed by the key this trust file binds to their agent id (spec: registry#signatures). */
  trust?: TrustFile;
  /** How far a listing, and a watch's first reading, go (default DEFAULT_LISTING_BOUNDS). */
  listing?: ListingBounds;
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
    }
  /** A write the reader refused; with a trust file, the verified entry it replaced stays until its lifetime ends (TAP-REG-055). */
  | { kind: 'refused'; agentId: string; refusal: Refusal };

/** A running watch. */
export interface RegistryWatch {
  /** Resolves once the entries that were live when the watch began have been reported, or the listing budget ran out. */
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
  /** The trust file the reads verify against, if any. */
  readonly trust: TrustFile | undefined;
  /** One agent's record, or undefined when absent, invalid, refused or (unless includeStale) stale. */
  get(agentId: string, options?: { includeStale?: boolean }): Promise<RegistryRecord | undefined>;
  /** The key's last write as it is, whatever the trust file says: its revision and the entry it holds, if it holds one. */
  held(agentId: string): Promise<{ revision: number; entry?: RegistryEntry; writtenAt?: Date } | undefined>;
  /** The live records matching the query, within the listing bounds (spec: registry#discovery); throws on an unreadable range. */
  list(query?: DiscoveryQuery, bounds?: ListingBounds): Promise<RegistryRecord[]>;
  /** A bounded listing with what it refused and whether it was cut short (spec: registry#bounds). */
  survey(query?: DiscoveryQuery, bounds?: ListingBounds): Promise<Listing>;
  /** The bucket's bounds as the server has them (0 or less: none). */
  limits(): Promise<BucketLimits>;
  /**
   * Reports live matching records as they join, change and leave, expiry included (TAP-REG-023).
   * It reports the writes it reads: the bucket keeps the last value of each key, so a key written
   * twice before the watch reads the first is reported once, at its second value.
   */
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

/** A record from a key-value entry, or undefined for a delete or an invalid value (TAP-REG-008). */
export function recordOf(e: KvEntry): RegistryRecord | undefined {
  const reading = readingOf(e);
  return reading.kind === 'entry' ? reading.record : undefined;
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
    const replicas = replicasFor(nc, options.replicas);
    kv = await createBucket(nc, kvm, bucket, maxAgeMs, { ...DEFAULT_BUCKET_LIMITS, ...options.limits }, replicas);
  }
  return new NatsRegistry(kv, bucket, maxAgeMs, options.trust, options.listing ?? {});
}

/**
 * Creates the bucket with a history of 1, its max_age, its bounds and its replicas, in one stream
 * creation (spec: registry#nats, TAP-REG-042, TAP-REG-057, TAP-REG-065). The key-value API has no count of values, so the stream
 * is made here as the key-value library makes a bucket's, with max_msgs besides: a user the
 * permission model lets create the bucket need not be let update it (spec: bindings-nats#security).
 */
async function createBucket(
  nc: NatsConnection,
  kvm: InstanceType<typeof Kvm>,
  bucket: string,
  maxAgeMs: number,
  limits: BucketLimits,
  replicas: number,
): Promise<KV> {
  const jsm = await jetstreamManager(nc);
  await jsm.streams
    .add({
      name: `KV_${bucket}`,
      subjects: [kvSubject(bucket, Wildcard.TAIL)],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      discard: DiscardPolicy.New,
      max_msgs_per_subject: 1,
      max_msgs: limits.maxValues,
      max_bytes: limits.maxBytes,
      max_msg_size: limits.maxValueSize,
      max_age: maxAgeMs * 1_000_000,
      allow_rollup_hdrs: true,
      allow_direct: true,
      num_replicas: replicas,
    })
    .catch((err: Error) => {
      // Another member created it meanwhile: open what is there.
      if (!/already in use|already exists/i.test(err.message)) throw err;
    });
  return kvm.open(bucket);
}

const toBytes = (text: string, agentId: string): Uint8Array => {
  const bytes = encoder.encode(text);
  // spec: registry#bounds, TAP-REG-047: an entry is at most 64 KiB of JSON text.
  if (bytes.length > MAX_ENTRY_BYTES)
    throw new RangeError(
      `the registry entry of ${agentId} is ${bytes.length} bytes of JSON, more than an entry may be (${MAX_ENTRY_BYTES}); shorten the card's descriptions or capabilities`,
    );
  return bytes;
};

class NatsRegistry implements Registry {
  constructor(
    private readonly kv: KV,
    readonly bucket: string,
    readonly maxAgeMs: number,
    readonly trust: TrustFile | undefined,
    private readonly bounds: ListingBounds,
  ) {}

  async get(agentId: string, options: { includeStale?: boolean } = {}): Promise<RegistryRecord | undefined> {
    const e = await this.kv.get(agentId);
    const reading = e ? readingOf(e, this.trust) : undefined;
    if (reading?.kind !== 'entry') return undefined;
    return options.includeStale || isLive(reading.record) ? reading.record : undefined;
  }

  async held(agentId: string): Promise<{ revision: number; entry?: RegistryEntry; writtenAt?: Date } | undefined> {
    const e = await this.kv.get(agentId);
    if (!e) return undefined;
    const reading = readingOf(e);
    if (reading.kind === 'entry') return { revision: e.revision, entry: reading.record.entry, writtenAt: e.created };
    if (reading.kind === 'refused' && reading.refusal.entry)
      return { revision: e.revision, entry: reading.refusal.entry, writtenAt: e.created };
    return { revision: e.revision };
  }

  async list(query: DiscoveryQuery = {}, bounds?: ListingBounds): Promise<RegistryRecord[]> {
    return (await this.survey(query, bounds)).records;
  }

  survey(query: DiscoveryQuery = {}, bounds?: ListingBounds): Promise<Listing> {
    return listBucket(this.kv, compileQuery(query), { ...this.bounds, ...bounds }, this.trust);
  }

  async limits(): Promise<BucketLimits> {
    const { config } = (await this.kv.status()).streamInfo;
    return { maxValueSize: config.max_msg_size ?? -1, maxValues: config.max_msgs ?? -1, maxBytes: config.max_bytes ?? -1 };
  }

  async watch(onChange: (change: RegistryChange) => void, query: DiscoveryQuery = {}): Promise<RegistryWatch> {
    const compiled = compileQuery(query);
    const trust = this.trust;
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
    // The last revision seen per key, so that a direct read and the watch may deliver one write twice, in either order.
    const revisions = new Map<string, number>();
    const seen = (e: KvEntry): void => {
      const agentId = e.key;
      if ((revisions.get(agentId) ?? 0) >= e.revision) return;
      revisions.set(agentId, e.revision);
      const reading = readingOf(e, trust);
      if (reading.kind === 'refused') {
        onChange({ kind: 'refused', agentId, refusal: reading.refusal });
        // spec: registry#signatures, TAP-REG-055: a refused write leaves the verified entry it replaced in place.
        if (trust) return;
      }
      const record = reading.kind === 'entry' ? reading.record : undefined;
      const before = known.get(agentId)?.record;
      if (!record || !matches(record, compiled, Date.now())) {
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
    const atEnd = await endOfBucket(this.kv);
    if ((await this.kv.status()).values === 0) markReady();
    // An initial value that aged out before the watch began never arrives: look again now and then.
    const recheck = setInterval(() => {
      void this.kv.status().then(
        (s) => s.values === 0 && markReady(),
        () => {},
      );
    }, 250).unref();
    // spec: registry#bounds, TAP-REG-049, TAP-REG-056: the first reading is bounded in time too; with a trust
    // file, the keys it names are then read directly, so that a flood cannot hide a verified agent.
    const budgetMs = this.bounds.budgetMs ?? DEFAULT_LISTING_BOUNDS.budgetMs;
    let initialDone = false;
    const budget = setTimeout(() => {
      if (initialDone || stopped) return;
      const missing = trust ? Object.keys(trust.principals).filter((id) => !revisions.has(id)) : [];
      void readKeys(this.kv, missing, (e) => !stopped && seen(e))
        .catch(() => {})
        .finally(markReady);
    }, budgetMs).unref();
    void ready.then(() => {
      initialDone = true;
      clearInterval(recheck);
      clearTimeout(budget);
    });
    const follower = await followBucket(this.kv, async (e) => {
      if (stopped) return;
      seen(e);
      if (!initialDone && (await atEnd(e).catch(() => false))) {
        initialDone = true;
        markReady();
      }
    });
    return {
      ready,
      current: () => [...known.values()].map((k) => k.record).filter((r) => isLive(r)),
      stop: () => {
        stopped = true;
        clearInterval(recheck);
        clearTimeout(budget);
        for (const id of [...known.keys()]) forget(id);
        follower.stop();
        markReady();
      },
    };
  }

  async lastRevision(agentId: string): Promise<number | undefined> {
    return (await this.kv.get(agentId))?.revision;
  }

  create(entry: RegistryEntry): Promise<number> {
    return this.kv.create(entry.agent_id, toBytes(JSON.stringify(entry), entry.agent_id)).catch((err: Error) => {
      throw fullBucket(err, this.bucket);
    });
  }

  update(entry: RegistryEntry, revision: number): Promise<number> {
    return this.kv.update(entry.agent_id, toBytes(JSON.stringify(entry), entry.agent_id), revision).catch((err: Error) => {
      throw fullBucket(err, this.bucket);
    });
  }

  async withdraw(agentId: string, revision: number): Promise<void> {
    await this.kv.delete(agentId, { previousSeq: revision });
  }
}

/** The server's refusal of a write to a full bucket, said for people; any other error as it is. */
function fullBucket(err: Error, bucket: string): Error {
  if (!/maximum (messages|bytes) exceeded/i.test(err.message)) return err;
  const full = new Error(
    `the registry bucket ${bucket} is full (${err.message}): no new agent can join until entries age out; find who writes so many keys (tapctl mesh agents lists them)`,
    { cause: err },
  );
  full.name = 'RegistryFullError';
  return full;
}
