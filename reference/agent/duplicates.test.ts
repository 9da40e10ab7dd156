import { afterEach, describe, expect, it } from 'vitest';
import { DuplicateTable } from './duplicates.ts';
import { REQUESTER_ID, TEST_KEY, TEST_KEY_BYTES, testAgent, TestPeer, expectCleanHistories } from './peer.testkit.ts';

afterEach(expectCleanHistories);

const KEY = { keyId: 'k1', key: TEST_KEY_BYTES };
const integrity = { params: { integrity: { alg: 'hmac-sha256', key_id: 'k1' } } };

describe('DuplicateTable (spec: idempotency#duplicate-table)', () => {
  it('forgets the oldest entries beyond its byte bound, but never the newest minEntries', () => {
    const table = new DuplicateTable(100, 10_000, 3);
    for (let i = 0; i < 20; i++) table.set(`m${i}`, { replies: ['x'.repeat(1000)] });
    expect(table.bytes).toBeLessThanOrEqual(10_000);
    expect(table.get('m19')?.replies).toEqual(['x'.repeat(1000)]);
    expect(table.get('m0')).toBeUndefined();
    const tight = new DuplicateTable(100, 1, 3);
    for (let i = 0; i < 10; i++) tight.set(`m${i}`, { replies: ['y'] });
    expect([...tight.entries()].map(([id]) => id)).toEqual(['m7', 'm8', 'm9']);
  });

  it('counts an id kept twice once, whether or not a lookup missed it just before', () => {
    const table = new DuplicateTable(100, 10_000, 3);
    expect(table.get('a')).toBeUndefined();
    table.set('a', { replies: ['x'] });
    const one = table.bytes;
    table.set('a', { replies: ['y'] });
    expect(table.bytes).toBe(one);
    expect(table.size).toBe(1);
    // A lookup that missed, then a change of the table, then the missed id kept: still counted once.
    expect(table.get('b')).toBeUndefined();
    table.set('c', { replies: ['z'] });
    table.set('b', { replies: ['w'] });
    table.set('b', { replies: ['v'] });
    expect(table.size).toBe(3);
    expect(table.bytes).toBe(3 * one);
    expect(table.get('b')?.replies).toEqual(['v']);
  });

  it('forgets in the order ids were kept, an id kept again counting as new', () => {
    const table = new DuplicateTable(3, 10_000, 0);
    for (const id of ['m1', 'm2', 'm3']) table.set(id, { replies: [] });
    table.set('m1', { replies: ['again'] });
    table.set('m4', { replies: [] });
    table.set('m5', { replies: [] });
    expect([...table.entries()].map(([id]) => id)).toEqual(['m1', 'm4', 'm5']);
  });
});

describe('duplicate replies under hostile use (spec: limits#table-limits)', () => {
  it('keeps 400 status requests of a 60 KB result within the byte bound, and still re-sends each reply byte for byte', async () => {
    const agent = testAgent();
    const peer = new TestPeer(agent);
    await peer.handshake();
    peer.request('big', 'tap.test.echo', 'a'.repeat(60_000));
    await peer.result('big');
    const before = agent.stats().duplicateBytes;
    const statuses = [];
    for (let i = 0; i < 400; i++) {
      const status = peer.send({ type: 'task.status', task_id: 'big' });
      statuses.push(status);
      await peer.reply(status.message_id);
    }
    // 400 whole snapshots would hold 24 MB; each remembered reply costs a fixed few hundred bytes.
    expect(agent.stats().duplicateBytes - before).toBeLessThan(400 * 1024);
    const first = statuses[0]!;
    const original = peer.raw.find((t) => t.includes(`"reply_to":"${first.message_id}"`))!;
    peer.sendText(JSON.stringify(first));
    await peer.until(() => peer.raw.filter((t) => t.includes(`"reply_to":"${first.message_id}"`)).length === 2);
    expect(peer.raw.filter((t) => t.includes(`"reply_to":"${first.message_id}"`))).toEqual([original, original]);
  }, 60_000);
});

describe('a replayed resume (spec: idempotency#duplicate-messages, resume#reconnect)', () => {
  it('answers a captured signed resume replayed on another connection as a duplicate, and leaves the session where it is', async () => {
    const agent = testAgent({ keys: [{ key_id: 'k1', key: TEST_KEY, peer: REQUESTER_ID }] });
    const first = new TestPeer(agent);
    first.key = KEY;
    await first.handshake(integrity);
    first.request('s1', 'tap.test.stream', { count: 8, interval_ms: 100 });
    await first.waitFor((m) => m.task_id === 's1' && m.sequence === 2);
    await first.close();

    const legit = new TestPeer(agent);
    legit.key = KEY;
    const init = legit.init({ ...integrity, resume: { session_id: first.sessionId!, resume_token: first.resumeToken!, tasks: [] } });
    const ack = await legit.reply(init.message_id);
    expect(ack.payload.resumed).toBe(true);
    legit.sessionId = ack.payload.session_id;
    const ready = legit.send({ type: 'handshake.ready', payload: { params: ack.payload.params } });
    expect((await legit.reply(ready.message_id)).type).toBe('handshake.go');
    const ackText = legit.raw.find((t) => t.includes(`"reply_to":"${init.message_id}"`));

    const thief = new TestPeer(agent);
    thief.sendText(JSON.stringify(init));
    await thief.until(() => thief.raw.length === 1);
    expect(thief.raw[0]).toBe(ackText);
    thief.sendText(JSON.stringify(ready));
    const refused = await thief.waitFor((m) => m.reply_to === ready.message_id);
    expect(refused.type).toBe('error');

    await legit.result('s1');
    expect(legit.closed).toBe(false);
    expect(thief.received.filter((m) => m.task_id === 's1')).toEqual([]);
    const ping = legit.send({ type: 'ping' });
    expect((await legit.reply(ping.message_id)).type).toBe('pong');
  }, 30_000);
});
