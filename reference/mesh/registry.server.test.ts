import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import type { AgentCard, Capability } from '../../schemas/src/index.ts';
import { NO_NATS_SERVER, natsServerInstalled, startNatsServer, type NatsServer } from '../transports/nats/nats-server.testkit.ts';
import { jetstreamManager } from '@nats-io/jetstream';
import { newSigningKey, trustOf } from '../trust.ts';
import type { RegistryEntry } from './entry.ts';
import { DEFAULT_BUCKET_LIMITS, openRegistry, REGISTRY_BUCKET, type Registry, type RegistryChange } from './registry.ts';
import { signEntry } from './signature.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const capability = (name: string, version: string, extra: Partial<Capability> = {}): Capability => ({
  name,
  version,
  description: `${name} ${version}`,
  input_formats: ['json'],
  output_formats: ['json'],
  streaming: false,
  side_effects: false,
  ...extra,
});

function entry(agentId: string, capabilities: Capability[], over: Partial<RegistryEntry> = {}): RegistryEntry {
  const card: AgentCard = {
    agent_id: agentId,
    name: agentId,
    description: 'a test agent',
    capabilities,
    limits: { max_concurrent_tasks: 4, max_task_seconds: 60, max_message_bytes: 1048576 },
  };
  const now = new Date().toISOString();
  return {
    agent_id: agentId,
    instance: `i-${agentId}`,
    card,
    versions: ['1.0'],
    endpoints: [{ binding: 'nats', url: `nats://127.0.0.1:4222/${agentId}` }],
    load: { running_tasks: 0, max_concurrent_tasks: 4 },
    heartbeat_ms: 200,
    ttl_ms: 1000,
    started_at: now,
    updated_at: now,
    ...over,
  };
}

/**
 * Waits until `check` holds, polling every 20 ms, for at most `ms` (generous: a loaded machine
 * delays timers); `seen` says in the failure what was there instead.
 */
async function until(check: () => boolean, ms = 10_000, seen?: () => string): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`the condition did not hold in time${seen ? `; seen: ${seen()}` : ''}`);
    await sleep(20);
  }
}

/** A change as the tests compare it: "joined b", "left b expired". */
const said = (c: RegistryChange): string => `${c.kind} ${c.agentId}${c.kind === 'left' ? ` ${c.reason}` : ''}`;

/** Waits until a watch has reported at least `n` changes; a failure lists those it did report. */
const untilChanges = (changes: RegistryChange[], n: number): Promise<void> =>
  until(
    () => changes.length >= n,
    10_000,
    () => changes.map(said).join(', '),
  );

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'the registry on NATS (spec: registry#nats)'), () => {
  let server: NatsServer;
  let nc: NatsConnection;
  let buckets = 0;
  const fresh = (): Promise<Registry> => openRegistry(nc, { bucket: `TAP_REGISTRY_T${++buckets}`, maxAgeMs: 5000 });

  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  it('creates the bucket TAP_REGISTRY with a history of 1 and a max_age, and opens it again as it is (TAP-REG-039, TAP-REG-042)', async () => {
    const created = await openRegistry(nc);
    expect(created.bucket).toBe(REGISTRY_BUCKET);
    expect(created.maxAgeMs).toBe(60_000);
    const status = await (await new Kvm(nc).open(REGISTRY_BUCKET)).status();
    expect(status.history).toBe(1);
    // spec: registry#bounds, TAP-REG-057: the bucket is bounded in value size, values and bytes.
    const { config } = await (await jetstreamManager(nc)).streams.info(`KV_${REGISTRY_BUCKET}`);
    expect([config.max_msg_size, config.max_msgs, config.max_bytes]).toEqual([65_536, 10_000, 64 * 1024 * 1024]);
    expect(await created.limits()).toEqual(DEFAULT_BUCKET_LIMITS);
    const again = await openRegistry(nc, { maxAgeMs: 1234 });
    expect(again.maxAgeMs).toBe(60_000);
    await expect(openRegistry(nc, { bucket: 'TAP_REGISTRY_MISSING', create: false })).rejects.toThrow(/cannot open the registry bucket/);
  });

  it('stores an entry under its agent id and reads it back with the server write time (TAP-REG-039, TAP-REG-040)', async () => {
    const r = await fresh();
    const before = Date.now();
    const rev = await r.create(entry('coder.one', [capability('code.write', '1.4.0')]));
    const got = await r.get('coder.one');
    expect(got?.revision).toBe(rev);
    expect(got?.entry.card.capabilities[0]?.version).toBe('1.4.0');
    expect(Math.abs(got!.writtenAt.getTime() - before)).toBeLessThan(1000);
    await expect(r.create(entry('coder.one', []))).rejects.toThrow();
  });

  it('updates and withdraws only against the last revision (TAP-REG-012, TAP-REG-027, TAP-REG-043)', async () => {
    const r = await fresh();
    const first = await r.create(entry('a', []));
    const second = await r.update(entry('a', [], { load: { running_tasks: 1, max_concurrent_tasks: 4 } }), first);
    await expect(r.update(entry('a', []), first)).rejects.toThrow(/wrong last sequence/);
    await expect(r.withdraw('a', first)).rejects.toThrow(/wrong last sequence/);
    expect((await r.get('a'))?.entry.load.running_tasks).toBe(1);
    await r.withdraw('a', second);
    expect(await r.get('a')).toBeUndefined();
    // A delete marker, not a purge: the key keeps a revision that watchers were told of.
    expect(await r.lastRevision('a')).toBeGreaterThan(second);
  });

  it('discovers by capability, version range, permissions and binding, and never a stale entry (spec: registry#discovery)', async () => {
    // Every entry but coder.old lives a minute, so that the queries below, slow on a loaded
    // machine, never outlast one; coder.old's 200 ms are over before the first query.
    const r = await openRegistry(nc, { bucket: `TAP_REGISTRY_T${++buckets}`, maxAgeMs: 60_000 });
    const live = { ttl_ms: 60_000 };
    await r.create(entry('coder.one', [capability('code.write', '1.4.0')], live));
    await r.create(entry('coder.two', [capability('code.write', '2.1.0')], live));
    await r.create(entry('coder.pay', [capability('code.write', '1.9.0', { requires_permission: 'billing.charge' })], live));
    await r.create(
      entry('coder.ws', [capability('code.write', '1.0.0')], {
        ...live,
        endpoints: [{ binding: 'websocket', url: 'ws://127.0.0.1:1/tap' }],
      }),
    );
    await r.create(
      entry('coder.full', [capability('code.write', '1.5.0')], { ...live, load: { running_tasks: 4, max_concurrent_tasks: 4 } }),
    );
    await r.create(entry('analyst', [capability('text.analyse', '0.3.0')], live));
    await r.create(entry('coder.old', [capability('code.write', '1.1.0')], { ttl_ms: 200 }));
    await sleep(300);
    const ids = async (q: Parameters<Registry['list']>[0]) => (await r.list(q)).map((x) => x.entry.agent_id).sort();
    expect(await ids({ capability: 'code.write' })).toEqual(['coder.full', 'coder.one', 'coder.pay', 'coder.two', 'coder.ws']);
    expect(await ids({ capability: 'code.write', version: '^1.2' })).toEqual(['coder.full', 'coder.one', 'coder.pay']);
    expect(await ids({ capability: 'code.write', version: '>=2' })).toEqual(['coder.two']);
    expect(await ids({ capability: 'code.write', version: '^1.2', permissions: [] })).toEqual(['coder.full', 'coder.one']);
    expect(await ids({ capability: 'code.write', version: '^1.2', permissions: ['billing.charge'] })).toEqual([
      'coder.full',
      'coder.one',
      'coder.pay',
    ]);
    expect(await ids({ capability: 'code.write', binding: 'websocket' })).toEqual(['coder.ws']);
    expect(await ids({ capability: 'code.write', version: '^1.2', notFull: true })).toEqual(['coder.one', 'coder.pay']);
    expect(await ids({})).toEqual(['analyst', 'coder.full', 'coder.one', 'coder.pay', 'coder.two', 'coder.ws']);
    expect(await r.get('coder.old')).toBeUndefined();
    expect((await r.get('coder.old', { includeStale: true }))?.entry.agent_id).toBe('coder.old');
    await expect(r.list({ capability: 'code.write', version: 'newest' })).rejects.toThrow(/"newest"/);
  });

  it('treats a value that is not a valid entry, or one under another key, as absent (TAP-REG-008)', async () => {
    const r = await fresh();
    const kv = await new Kvm(nc).open(r.bucket);
    await kv.put('broken', 'not json');
    await kv.put('wrong.key', JSON.stringify(entry('other', [])));
    await kv.put('partial', JSON.stringify({ ...entry('partial', []), load: undefined }));
    await kv.put('extra', JSON.stringify({ ...entry('extra', [], { ttl_ms: 5000 }), x_colour: 'blue' }));
    expect(await r.get('broken')).toBeUndefined();
    expect(await r.get('wrong.key')).toBeUndefined();
    expect(await r.get('partial')).toBeUndefined();
    expect((await r.list()).map((x) => x.entry.agent_id)).toEqual(['extra']);
  });

  it('watches joins, changes, withdrawals, restarts, and expiries of which the server sends no notice (TAP-REG-023)', async () => {
    const r = await fresh();
    // Lifetimes: the bucket's longest (5 s) for the entries whose expiry this test does not wait
    // for, so that a loaded machine does not add one; a second for b's first life, which it does.
    const lasting = { ttl_ms: 5000 };
    await r.create(entry('early', [capability('code.write', '1.0.0')], lasting));
    const changes: RegistryChange[] = [];
    const watch = await r.watch((c) => changes.push(c), { capability: 'code.write' });
    await watch.ready;
    expect(changes.map(said)).toEqual(['joined early']);
    const rev = await r.create(entry('b', [capability('code.write', '1.0.0')], { ttl_ms: 1000 }));
    await r.create(entry('unrelated', [capability('text.analyse', '1.0.0')]));
    await untilChanges(changes, 2);
    const rev2 = await r.update(entry('b', [capability('code.write', '1.0.0')], { ttl_ms: 1000 }), rev);
    await untilChanges(changes, 3);
    // b is not renewed: its lifetime passes, and the watch reports it gone though the server says nothing.
    await untilChanges(changes, 4);
    expect(changes.slice(1).map(said)).toEqual(['joined b', 'updated b', 'left b expired']);
    expect(watch.current().map((x) => x.entry.agent_id)).toEqual(['early']);
    // Written again, b is back; then a new instance takes the key, then it is withdrawn.
    // Each write waits for the watch to read the one before: the bucket keeps one value a key, so a
    // write the watch has not read yet when the next comes is replaced, and reported only as the next.
    const rev3 = await r.update(entry('b', [capability('code.write', '1.0.0')], lasting), rev2);
    await untilChanges(changes, 5);
    const rev4 = await r.update(entry('b', [capability('code.write', '1.0.0')], { ...lasting, instance: 'i-b-2' }), rev3);
    await untilChanges(changes, 7);
    await r.withdraw('b', rev4);
    await untilChanges(changes, 8);
    expect(changes.slice(4).map(said)).toEqual(['joined b', 'left b restarted', 'joined b', 'left b withdrawn']);
    watch.stop();
  });

  it('leaves no consumer on the bucket behind a listing or a stopped watch (each would stay five minutes)', async () => {
    const r = await openRegistry(nc, { bucket: 'TAP_REGISTRY_READERS', maxAgeMs: 60_000 });
    await r.create(entry('reader.one', [capability('code.write', '1.0.0')]));
    for (let i = 0; i < 5; i++) expect((await r.list()).map((x) => x.entry.agent_id)).toEqual(['reader.one']);
    const watch = await r.watch(() => {});
    await watch.ready;
    watch.stop();
    const jsm = await jetstreamManager(nc);
    const left = async (): Promise<string[]> => {
      const names: string[] = [];
      for await (const c of jsm.consumers.list('KV_TAP_REGISTRY_READERS')) names.push(c.name);
      return names;
    };
    // The deletes are sent as the listing and the watch end: give them a moment to land.
    let names = await left();
    for (let i = 0; i < 50 && names.length > 0; i++) names = await sleep(20).then(left);
    expect(names).toEqual([]);
  });

  it('is ready at once on an empty bucket', async () => {
    const r = await fresh();
    const watch = await r.watch(() => {});
    await watch.ready;
    expect(watch.current()).toEqual([]);
    watch.stop();
  });

  it('refuses a new key in a full bucket while the keys in it are renewed, and a value over 64 KiB (TAP-REG-047, TAP-REG-057)', async () => {
    const r = await openRegistry(nc, { bucket: 'TAP_REGISTRY_FULL', maxAgeMs: 5000, limits: { maxValues: 3 } });
    const revs = [];
    for (const id of ['a', 'b', 'c']) revs.push(await r.create(entry(id, [])));
    await expect(r.create(entry('d', []))).rejects.toThrow(/the registry bucket TAP_REGISTRY_FULL is full \(maximum messages exceeded\)/);
    await r.update(entry('a', [], { load: { running_tasks: 1, max_concurrent_tasks: 4 } }), revs[0]!);
    expect((await r.get('a'))?.entry.load.running_tasks).toBe(1);
    const kv = await new Kvm(nc).open('TAP_REGISTRY_FULL');
    await expect(kv.put('b', 'x'.repeat(70_000))).rejects.toThrow(/message size exceeds maximum/);
  });

  it('takes, with a trust file, only entries their agent signed, and says why it refused the others (TAP-REG-053, TAP-REG-054)', async () => {
    const r = await fresh();
    const one = newSigningKey('coder.one');
    const two = newSigningKey('coder.two');
    const mallory = newSigningKey('mallory');
    const trusted = await openRegistry(nc, { bucket: r.bucket, trust: trustOf([one, two, mallory]) });
    const code = [capability('code.write', '1.4.0')];
    // The bucket's longest lifetime, so that no entry goes stale while a loaded machine lists them.
    const lasting = { ttl_ms: 5000 };
    await r.create(signEntry(entry('coder.one', code, lasting), one));
    await r.create(signEntry(entry('coder.two', code, lasting), mallory));
    await r.create(entry('coder.three', code, lasting));
    await r.create(signEntry(entry('mallory', code, lasting), mallory));
    await r.create(signEntry(entry('coder.old', code, lasting), mallory));
    // A write of coder.two's, signed long before the store took it: replayed.
    const kv = await new Kvm(nc).open(r.bucket);
    await kv.put(
      'coder.two',
      JSON.stringify(signEntry(entry('coder.two', code, { ...lasting, updated_at: new Date(Date.now() - 20_000).toISOString() }), two)),
    );
    const listing = await trusted.survey({ capability: 'code.write' });
    expect(listing.records.map((x) => x.entry.agent_id).sort()).toEqual(['coder.one', 'mallory']);
    expect(Object.fromEntries(listing.refused.map((x) => [x.agentId, x.reason]))).toEqual({
      'coder.two': expect.stringMatching(
        /^a replayed write: it was signed at .*, \d+ ms before the store took it, more than its ttl_ms \(5000\)$/,
      ),
      'coder.three': 'the trust file has no key for coder.three',
      'coder.old': 'the trust file has no key for coder.old',
    });
    expect(listing.truncated).toBeUndefined();
    expect(await trusted.get('coder.two')).toBeUndefined();
    expect((await trusted.get('coder.one'))?.entry.agent_id).toBe('coder.one');
    // Without a trust file the bucket's writers are trusted: every valid entry is taken.
    expect((await r.list({ capability: 'code.write' })).map((x) => x.entry.agent_id).sort()).toEqual([
      'coder.old',
      'coder.one',
      'coder.three',
      'coder.two',
      'mallory',
    ]);
  });

  it('stops a listing at its bounds and says so, and with a trust file still finds the agent a flood hides (TAP-REG-049)', async () => {
    const r = await openRegistry(nc, { bucket: 'TAP_REGISTRY_FLOOD', maxAgeMs: 60_000 });
    const kv = await new Kvm(nc).open(r.bucket);
    const key = newSigningKey('real.agent');
    const trusted = await openRegistry(nc, { bucket: r.bucket, trust: trustOf([key]) });
    const code = [capability('code.write', '1.4.0')];
    const forged = JSON.stringify(entry('flood.x', code, { ttl_ms: 50_000 }));
    for (let i = 0; i < 1500; i += 100)
      await Promise.all(Array.from({ length: 100 }, (_, k) => kv.put(`flood.a${i + k}`, forged.replaceAll('flood.x', `flood.a${i + k}`))));
    // The live agent writes last: a listing read in write order meets it at the very end.
    await r.create(signEntry(entry('real.agent', code, { ttl_ms: 50_000 }), key));
    const whole = await r.survey({}, { maxEntries: 5000 });
    expect([whole.read, whole.records.length, whole.truncated]).toEqual([1501, 1501, undefined]);
    const capped = await r.survey({}, { maxEntries: 200 });
    expect([capped.read, capped.truncated]).toEqual([200, 'it read 200 keys, the most a listing reads']);
    expect(capped.records.some((x) => x.entry.agent_id === 'real.agent')).toBe(false);
    const hurried = await r.survey({}, { budgetMs: 0 });
    expect(hurried.read).toBeLessThan(1501);
    expect(hurried.truncated).toBe('the time budget of 0 ms ran out');
    const found = await trusted.survey({ capability: 'code.write' }, { maxEntries: 200 });
    expect(found.truncated).toBe('it read 200 keys, the most a listing reads');
    expect(found.records.map((x) => x.entry.agent_id)).toEqual(['real.agent']);
    expect(found.refused.length).toBe(200);
    // A watch's first reading is bounded too, and reads the trusted keys it has not met.
    const bounded = await openRegistry(nc, { bucket: r.bucket, trust: trustOf([key]), listing: { budgetMs: 0 } });
    const watch = await bounded.watch(() => {});
    await watch.ready;
    expect(watch.current().map((x) => x.entry.agent_id)).toEqual(['real.agent']);
    watch.stop();
  });

  it('keeps, with a trust file, the verified entry through a refused write until its lifetime ends (TAP-REG-055)', async () => {
    const r = await fresh();
    const key = newSigningKey('signed.b');
    const trusted = await openRegistry(nc, { bucket: r.bucket, trust: trustOf([key]) });
    const changes: RegistryChange[] = [];
    const watch = await trusted.watch((c) => changes.push(c));
    await watch.ready;
    // Three seconds: long enough for the forged write to come first on a loaded machine.
    const rev = await r.create(signEntry(entry('signed.b', [], { ttl_ms: 3000 }), key));
    await untilChanges(changes, 1);
    await r.update(
      entry('signed.b', [], { instance: 'forger', endpoints: [{ binding: 'nats', url: 'nats://127.0.0.1:9/signed.b' }] }),
      rev,
    );
    await untilChanges(changes, 2);
    expect(changes.map(said)).toEqual(['joined signed.b', 'refused signed.b']);
    expect(watch.current().map((x) => [x.entry.instance, x.entry.endpoints[0]?.url])).toEqual([
      ['i-signed.b', 'nats://127.0.0.1:4222/signed.b'],
    ]);
    // Not renewed by its agent, the verified entry goes when its own lifetime ends.
    await untilChanges(changes, 3);
    expect(said(changes[2]!)).toBe('left signed.b expired');
    expect(watch.current()).toEqual([]);
    watch.stop();
  });
});
