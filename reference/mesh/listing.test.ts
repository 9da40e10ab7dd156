/**
 * The listing of the registry bucket against a bucket held in memory whose watch delivers its
 * values as slowly as a test needs (spec: registry#bounds).
 */
import type { KV, KvEntry } from '@nats-io/kv';
import { describe, expect, it } from 'vitest';
import { compileQuery, type RegistryEntry } from './entry.ts';
import { followBucket, listBucket, readingOf } from './listing.ts';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const entry = (agentId: string, ttlMs: number): RegistryEntry => ({
  agent_id: agentId,
  instance: `i-${agentId}`,
  card: {
    agent_id: agentId,
    name: agentId,
    description: 'a listed agent',
    capabilities: [],
    limits: { max_concurrent_tasks: 1, max_task_seconds: 60, max_message_bytes: 1048576 },
  },
  versions: ['1.0'],
  endpoints: [],
  load: { running_tasks: 0, max_concurrent_tasks: 1 },
  heartbeat_ms: 100,
  ttl_ms: ttlMs,
  started_at: '2026-12-04T10:00:00.000Z',
  updated_at: '2026-12-04T10:00:00.000Z',
});

/** A key-value entry as the bucket's watch delivers it. */
function kvEntry(key: string, text: string, revision: number, created: Date, delta: number): KvEntry {
  return {
    bucket: 'TAP_REGISTRY',
    key,
    value: new TextEncoder().encode(text),
    created,
    revision,
    delta,
    operation: 'PUT',
    length: Buffer.byteLength(text),
    json: <T>() => JSON.parse(text) as T,
    string: () => text,
  } as KvEntry;
}

/** A bucket whose watch yields what `deliver` yields, when it yields it; its last write is `last()`. */
function bucket(values: number, deliver: () => AsyncGenerator<KvEntry>, last: () => number = () => values): KV {
  return {
    status: async () => ({ values, streamInfo: { state: { last_seq: last() } } }),
    watch: async () => {
      const source = deliver();
      let stopped = false;
      return {
        stop: () => {
          stopped = true;
        },
        async *[Symbol.asyncIterator]() {
          for await (const e of source) {
            if (stopped) return;
            yield e;
          }
        },
      };
    },
  } as unknown as KV;
}

describe('a listing of the registry bucket (spec: registry#bounds)', () => {
  it('judges each entry live by the clock when it reads it, not when the listing ends (TAP-REG-050)', async () => {
    const kv = bucket(2, async function* () {
      // An entry with 300 ms of its lifetime left when it is read; the listing then takes 700 ms more.
      const first = entry('short.lived', 1000);
      yield kvEntry('short.lived', JSON.stringify(first), 1, new Date(Date.now() - 700), 1);
      await sleep(700);
      yield kvEntry('late.one', JSON.stringify(entry('late.one', 60_000)), 2, new Date(), 0);
    });
    const listing = await listBucket(kv, compileQuery({}));
    expect(listing.records.map((r) => r.entry.agent_id)).toEqual(['short.lived', 'late.one']);
    expect([listing.read, listing.truncated]).toEqual([2, undefined]);
  });

  it('treats a value longer than 65,536 bytes as absent, and says why (TAP-REG-048)', () => {
    const big = { ...entry('big.one', 60_000), card: { ...entry('big.one', 60_000).card, description: 'x'.repeat(66_000) } };
    const reading = readingOf(kvEntry('big.one', JSON.stringify(big), 1, new Date(), 0));
    expect(reading).toMatchObject({
      kind: 'refused',
      refusal: { agentId: 'big.one', reason: expect.stringMatching(/^the value is \d+ bytes, more than an entry may be \(65536\)$/) },
    });
  });

  it('reads a key written again while it runs, whose first value the watch skipped and the server did not count (TAP-REG-049)', async () => {
    let lastSeq = 3;
    const text = (id: string) => JSON.stringify(entry(id, 60_000));
    const kv = bucket(
      3,
      async function* () {
        yield kvEntry('a', text('a'), 1, new Date(), 1);
        // "live" (revision 2) is written again as revision 4 before the watch reaches it: the watch
        // skips revision 2, and the server's pending count says nothing is left after b.
        lastSeq = 4;
        yield kvEntry('b', text('b'), 3, new Date(), 0);
        yield kvEntry('live', text('live'), 4, new Date(), 0);
      },
      () => lastSeq,
    );
    const listing = await listBucket(kv, compileQuery({}));
    expect(listing.records.map((r) => r.entry.agent_id)).toEqual(['a', 'b', 'live']);
  });

  it('counts a key renewed while it runs once, so that a listing of a full bucket is not cut short (TAP-REG-049)', async () => {
    let lastSeq = 2;
    const text = (id: string) => JSON.stringify(entry(id, 60_000));
    const kv = bucket(
      2,
      async function* () {
        yield kvEntry('a', text('a'), 1, new Date(), 1);
        lastSeq = 3;
        yield kvEntry('b', text('b'), 2, new Date(), 1);
        yield kvEntry('a', text('a'), 3, new Date(), 0);
      },
      () => lastSeq,
    );
    const whole = await listBucket(kv, compileQuery({}), { maxEntries: 2 });
    expect([whole.read, whole.truncated, whole.records.map((r) => [r.entry.agent_id, r.revision])]).toEqual([
      3,
      undefined,
      [
        ['a', 3],
        ['b', 2],
      ],
    ]);
    const cut = await listBucket(kv, compileQuery({}), { maxEntries: 1 });
    expect([cut.read, cut.truncated]).toEqual([1, 'it read 1 keys, the most a listing reads']);
  });
});

/**
 * A bucket that holds `writes` (revision i + 1 for the i-th) and whose watches deliver from the
 * revision they are asked for; the first watch goes silent after `firstDelivers` values, as a
 * watch does whose server died, or ends there when `firstEnds`.
 */
function silentBucket(writes: string[], firstDelivers: number, firstEnds = false) {
  const opened: Array<number | undefined> = [];
  const stops: Array<() => void> = [];
  const kv = {
    status: async () => ({ values: writes.length, streamInfo: { state: { last_seq: writes.length } } }),
    watch: async (opts: { resumeFromRevision?: number } = {}) => {
      const first = opened.length === 0;
      opened.push(opts.resumeFromRevision);
      let stop!: () => void;
      const stopped = new Promise<void>((r) => (stop = r));
      stops.push(stop);
      return {
        stop,
        async *[Symbol.asyncIterator]() {
          for (let rev = opts.resumeFromRevision ?? 1; rev <= writes.length; rev++) {
            if (first && rev > firstDelivers) {
              if (!firstEnds) await stopped;
              return;
            }
            yield kvEntry(writes[rev - 1]!, '{}', rev, new Date(), 0);
          }
          await stopped;
        },
      };
    },
  } as unknown as KV;
  return { kv, opened, stopAll: () => stops.forEach((s) => s()) };
}

describe('following the registry bucket when its watch goes silent', () => {
  const followed = async (b: ReturnType<typeof silentBucket>, want: number) => {
    const seen: number[] = [];
    const follower = await followBucket(b.kv, (e) => void seen.push(e.revision), 20);
    for (let i = 0; i < 100 && seen.length < want; i++) await sleep(10);
    follower.stop();
    b.stopAll();
    return { seen, restarts: follower.restarts };
  };

  it('starts a new watch after the last revision it saw when the stream holds writes it has not seen', async () => {
    const b = silentBucket(['a', 'b', 'c', 'd'], 2);
    const { seen, restarts } = await followed(b, 4);
    expect(seen).toEqual([1, 2, 3, 4]);
    expect(b.opened).toEqual([undefined, 3]);
    expect(restarts).toBe(1);
  });

  it('starts a new watch when the watch ends by itself', async () => {
    const b = silentBucket(['a', 'b', 'c'], 1, true);
    const { seen } = await followed(b, 3);
    expect(seen).toEqual([1, 2, 3]);
    expect(b.opened).toEqual([undefined, 2]);
  });

  it('keeps a watch that has seen every write, however long it is quiet', async () => {
    const b = silentBucket(['a', 'b'], 2);
    const follower = await followBucket(b.kv, () => {}, 20);
    await sleep(200);
    follower.stop();
    b.stopAll();
    expect(b.opened).toEqual([undefined]);
    expect(follower.restarts).toBe(0);
  });
});
