/**
 * Reading the registry bucket: what one write of a key holds as a reader sees it (an entry, or a
 * value refused and why), and a listing of the whole bucket that is bounded by a number of
 * values and a time, reads every value once through one consumer instead of a get per key, and
 * judges each entry's liveness when it reads it (spec: registry#bounds, registry#signatures).
 */
import type { KV, KvEntry } from '@nats-io/kv';
import type { TrustFile } from '../trust.ts';
import { entryProblem, MAX_ENTRY_BYTES, matches, type CompiledQuery, type RegistryEntry, type RegistryRecord } from './entry.ts';
import { refusalOf, trusts } from './signature.ts';

/** What one write of a key holds, as a reader sees it. */
export type Reading =
  | { kind: 'entry'; record: RegistryRecord }
  /** A value the reader treats as absent: not a valid entry (TAP-REG-008), too large (TAP-REG-048), or not verified (TAP-REG-053, TAP-REG-054). */
  | { kind: 'refused'; refusal: Refusal }
  /** A delete or purge, or no write at all. */
  | { kind: 'absent' };

/** A value a reader refused: under which key, why, and the entry it claimed to be when it parsed as one. */
export interface Refusal {
  agentId: string;
  reason: string;
  revision: number;
  writtenAt: Date;
  entry?: RegistryEntry;
}

/** How far a listing reads (spec: registry#bounds, TAP-REG-049). */
export interface ListingBounds {
  /** The most keys read (default 10 000, the max_values of a bucket created with the defaults); a key renewed while the listing runs counts once. */
  maxEntries?: number;
  /** The most time spent reading, in ms (default 5000). */
  budgetMs?: number;
}

/** The default bounds of a listing. */
export const DEFAULT_LISTING_BOUNDS: Required<ListingBounds> = { maxEntries: 10_000, budgetMs: 5_000 };

/** A bounded listing: the live matching entries, the values refused, and whether it stopped at a bound. */
export interface Listing {
  records: RegistryRecord[];
  refused: Refusal[];
  /** The values read, deletes included. */
  read: number;
  /** Why the listing stopped before the end of the bucket, when it did: the answer may then miss entries. */
  truncated?: string;
}

const refused = (e: KvEntry, reason: string, entry?: RegistryEntry): Reading => ({
  kind: 'refused',
  refusal: { agentId: e.key, reason, revision: e.revision, writtenAt: e.created, ...(entry ? { entry } : {}) },
});

/** What a key-value entry holds for a reader with or without a trust file. */
export function readingOf(e: KvEntry, trust?: TrustFile): Reading {
  if (e.operation !== 'PUT') return { kind: 'absent' };
  if (e.length > MAX_ENTRY_BYTES) return refused(e, `the value is ${e.length} bytes, more than an entry may be (${MAX_ENTRY_BYTES})`);
  let value: unknown;
  try {
    value = e.json();
  } catch {
    return refused(e, 'the value is not JSON text');
  }
  const problem = entryProblem(value);
  if (problem) return refused(e, `not a valid entry: ${problem}`);
  const entry = value as RegistryEntry;
  // spec: registry#nats, TAP-REG-039: an entry under another key than its agent id is not valid.
  if (entry.agent_id !== e.key) return refused(e, `the entry names agent ${entry.agent_id}, not its key`, entry);
  // spec: registry#nats, TAP-REG-040: the write time is the server's stamp.
  const record: RegistryRecord = { entry, revision: e.revision, writtenAt: e.created };
  if (trust && !trusts(trust, e.key)) return refused(e, `the trust file has no key for ${e.key}`, entry);
  if (trust) {
    const reason = refusalOf(entry, e.created, trust);
    if (reason) return refused(e, reason, entry);
  }
  return { kind: 'entry', record };
}

/**
 * Lists the bucket through one watch of its last values, stopping at the end of the bucket or at
 * a bound, whichever comes first; each entry is judged live by the clock when it is read
 * (TAP-REG-049, TAP-REG-050). With a trust file, a listing cut short also reads every key of the
 * trust file directly (TAP-REG-056), so that no verified live agent is missed however many forged keys the bucket holds.
 */
export async function listBucket(kv: KV, compiled: CompiledQuery, bounds: ListingBounds = {}, trust?: TrustFile): Promise<Listing> {
  const maxEntries = bounds.maxEntries ?? DEFAULT_LISTING_BOUNDS.maxEntries;
  const budgetMs = bounds.budgetMs ?? DEFAULT_LISTING_BOUNDS.budgetMs;
  const listing: Listing = { records: [], refused: [], read: 0 };
  // The last write read of each key: a key renewed while the listing runs arrives twice.
  const latest = new Map<string, { revision: number; record?: RegistryRecord; refusal?: Refusal }>();
  const take = (e: KvEntry): void => {
    if ((latest.get(e.key)?.revision ?? 0) >= e.revision) return;
    const reading = readingOf(e, trust);
    const now = Date.now();
    if (reading.kind === 'entry' && matches(reading.record, compiled, now))
      latest.set(e.key, { revision: e.revision, record: reading.record });
    // A refused entry that would be stale anyway is no news: only the values a requester might have taken are told.
    else if (
      reading.kind === 'refused' &&
      (!reading.refusal.entry || reading.refusal.writtenAt.getTime() + reading.refusal.entry.ttl_ms > now)
    )
      latest.set(e.key, { revision: e.revision, refusal: reading.refusal });
    else latest.set(e.key, { revision: e.revision });
  };
  if ((await kv.status()).values > 0) {
    const iterator = await kv.watch({ key: '>' });
    const atEnd = await endOfBucket(kv);
    const deadline = Date.now() + budgetMs;
    let emptied = false;
    const timer = setTimeout(() => {
      listing.truncated ??= `the time budget of ${budgetMs} ms ran out`;
      iterator.stop();
    }, budgetMs);
    // Values that age out before the watch reaches them never arrive: look again now and then.
    const recheck = setInterval(() => {
      void kv.status().then(
        (s) => {
          if (s.values === 0) {
            emptied = true;
            iterator.stop();
          }
        },
        () => {},
      );
    }, 250);
    try {
      for await (const e of iterator) {
        // One key more than the bound ends the listing; later writes of keys already read do not.
        if (!latest.has(e.key) && latest.size >= maxEntries) {
          listing.truncated = `it read ${maxEntries} keys, the most a listing reads`;
          break;
        }
        listing.read++;
        take(e);
        if (await atEnd(e)) break;
        if (Date.now() >= deadline) {
          listing.truncated ??= `the time budget of ${budgetMs} ms ran out`;
          break;
        }
      }
    } finally {
      clearTimeout(timer);
      clearInterval(recheck);
      endWatch(iterator);
    }
    if (emptied) delete listing.truncated;
  }
  // Every key of the trust file, met or not: one met early may have been written again since.
  if (listing.truncated && trust) await readKeys(kv, Object.keys(trust.principals), take);
  for (const { record, refusal } of latest.values()) {
    if (record) listing.records.push(record);
    if (refusal) listing.refused.push(refusal);
  }
  return listing;
}

/**
 * Tells, for each value a watch of the whole bucket delivers, whether every value written before
 * now has been read. The watch sends the last value of each key in write order, then later
 * writes; a key written again while the watch runs has its first value skipped and the new one
 * sent after the others, and values that age out meanwhile leave the server's pending count above
 * 0. So the end is the bucket's last write, read again from the server each time it is reached
 * until nothing newer was written.
 */
export async function endOfBucket(kv: KV): Promise<(e: KvEntry) => Promise<boolean>> {
  let end = (await kv.status()).streamInfo.state.last_seq;
  let highest = 0;
  return async (e) => {
    highest = Math.max(highest, e.revision);
    if (highest < end && e.delta !== 0) return false;
    end = (await kv.status()).streamInfo.state.last_seq;
    return end <= highest;
  };
}

/** Reads the given keys, a few at a time, passing each value found to `take`. */
export async function readKeys(kv: KV, keys: readonly string[], take: (e: KvEntry) => void): Promise<void> {
  for (let i = 0; i < keys.length; i += 16) {
    const found = await Promise.all(keys.slice(i, i + 16).map((k) => kv.get(k).catch(() => null)));
    for (const e of found) if (e) take(e);
  }
}

/** A watch of every key of a bucket that starts again where it stopped (see followBucket). */
export interface BucketFollower {
  stop(): void;
  /** How many times the watch was started again after it stopped delivering. */
  readonly restarts: number;
}

/** How often a follower compares what it has seen with the end of the stream, in ms. */
export const FOLLOW_CHECK_MS = 2000;

/**
 * Stops a key-value watch and deletes the consumer it read through, which the client would leave on
 * the server for its inactive threshold (five minutes): one for every listing otherwise. The client
 * keeps that consumer in the watch's `_data`; a watch without one is only stopped.
 */
function endWatch(iterator: { stop(): void }): void {
  iterator.stop();
  const consumer = (iterator as { _data?: { delete?: () => Promise<boolean> } })._data;
  void consumer?.delete?.().catch(() => false);
}

/**
 * Follows every write to a bucket, from each key's last value on: one watch, passed entry by
 * entry to `take` (awaited, in order), started again after the last revision it saw when it
 * stops delivering. A watch is an ordered consumer held by one server; when that server dies the
 * client learns it only after two missed heartbeats of 30 s, and the watch meanwhile delivers
 * nothing, so a requester's view of the registry would miss every join and leave for a minute.
 * The follower checks every `checkMs` whether the stream holds writes it has not seen, and when
 * it saw nothing new between two checks while behind, or the watch ended, it starts a new one.
 * A write may then arrive twice; `take` drops what it has already seen by its revision.
 */
export function followBucket(kv: KV, take: (e: KvEntry) => void | Promise<void>, checkMs = FOLLOW_CHECK_MS): Promise<BucketFollower> {
  let stopped = false;
  let restarts = 0;
  let highest = 0;
  let current: { stop(): void } | undefined;
  let generation = 0;
  const open = async (from: number): Promise<void> => {
    const mine = ++generation;
    const iterator = await kv.watch(from > 0 ? { key: '>', resumeFromRevision: from } : { key: '>' });
    if (stopped || mine !== generation) return endWatch(iterator);
    current = { stop: () => endWatch(iterator) };
    void (async () => {
      for await (const e of iterator) {
        if (stopped || mine !== generation) break;
        highest = Math.max(highest, e.revision);
        await take(e);
      }
    })()
      .catch(() => {})
      // A watch that ends by itself is started again at the next check.
      .finally(() => mine === generation && !stopped && (current = undefined));
  };
  let behind: { seen: number } | undefined;
  let restarting = false;
  const check = setInterval(() => {
    if (stopped || restarting) return;
    void kv
      .status()
      .then(
        async (s) => {
          const end = s.streamInfo.state.last_seq;
          const stalled = current === undefined || (behind !== undefined && behind.seen === highest && highest < end);
          behind = highest < end ? { seen: highest } : undefined;
          if (!stalled || stopped) return;
          restarting = true;
          current?.stop();
          current = undefined;
          behind = undefined;
          restarts++;
          await open(highest + 1).finally(() => (restarting = false));
        },
        // No answer (a stream electing its leader): look again at the next check.
        () => {},
      )
      .catch(() => {});
  }, checkMs).unref();
  return open(0).then(
    () => ({
      stop: () => {
        stopped = true;
        clearInterval(check);
        current?.stop();
      },
      get restarts() {
        return restarts;
      },
    }),
    (err: unknown) => {
      clearInterval(check);
      throw err;
    },
  );
}
