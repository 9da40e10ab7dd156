import { afterEach, describe, expect, it } from 'vitest';
import { checkSignature } from '../core/index.ts';
import { hmacSha256 } from '../crypto.ts';
import { ManualClock, REQUESTER_ID, TEST_KEY, TEST_KEY_BYTES, testAgent, TestPeer, expectCleanHistories } from './peer.testkit.ts';

afterEach(expectCleanHistories);

const KEY = { keyId: 'k1', key: TEST_KEY_BYTES };
const integrity = { params: { integrity: { alg: 'hmac-sha256', key_id: 'k1' } } };

function keyedAgent(options: Parameters<typeof testAgent>[0] = {}) {
  return testAgent({ keys: [{ key_id: 'k1', key: TEST_KEY, peer: REQUESTER_ID }], ...options });
}

async function signedSession(options: Parameters<typeof testAgent>[0] = {}, now?: () => number): Promise<TestPeer> {
  const peer = new TestPeer(keyedAgent(options), { now });
  peer.key = KEY;
  await peer.handshake(integrity);
  return peer;
}

describe('integrity', () => {
  it('signs every message from the ack on and verifies every incoming one (spec: integrity#negotiation)', async () => {
    const peer = await signedSession();
    peer.request('e1', 'tap.test.echo', { café: '€' });
    await peer.result('e1');
    expect(peer.received.length).toBeGreaterThanOrEqual(5);
    for (const msg of peer.received) expect(checkSignature(msg, TEST_KEY_BYTES, hmacSha256, 'k1')).toBe('ok');
    expect(peer.received[0].payload.params.integrity).toEqual({ alg: 'hmac-sha256', key_id: 'k1' });
  });

  it('refuses a wrong or missing signature with INVALID_SIGNATURE and no effect (spec: integrity#verification)', async () => {
    const peer = await signedSession();
    const tampered = peer.build({ type: 'task.request', task_id: 't1', payload: { capability: 'tap.test.echo', input: 1 } });
    tampered.payload.input = 2;
    peer.sendText(JSON.stringify(tampered));
    const err = await peer.reply(tampered.message_id);
    expect(err.payload.code).toBe('INVALID_SIGNATURE');
    expect(checkSignature(err, TEST_KEY_BYTES, hmacSha256, 'k1')).toBe('ok');
    peer.key = undefined;
    const unsigned = peer.request('t1', 'tap.test.echo', 1);
    expect((await peer.reply(unsigned.message_id)).payload.code).toBe('INVALID_SIGNATURE');
    peer.key = KEY;
    const status = peer.send({ type: 'task.status', task_id: 't1' });
    expect((await peer.reply(status.message_id)).payload.code).toBe('UNKNOWN_TASK');
    // Under integrity, a session_id mismatch is INVALID_SIGNATURE.
    const wrong = peer.send({ type: 'task.status', task_id: 't1', session_id: 'AAAAAAAAAAAAAAAAAAAAAA' });
    expect((await peer.reply(wrong.message_id)).payload.code).toBe('INVALID_SIGNATURE');
  });

  it('refuses a first-seen message outside the skew window with REPLAY_DETECTED, but never a duplicate (spec: integrity#skew)', async () => {
    const clock = new ManualClock();
    const peer = await signedSession({ clock }, () => clock.now());
    const req = peer.request('s1', 'tap.test.echo', 1);
    await peer.reply(req.message_id);
    await clock.advance(400_000);
    void peer.end.send(JSON.stringify(req));
    await peer.until(() => peer.received.filter((m) => m.reply_to === req.message_id).length === 2);
    expect(peer.received.filter((m) => m.reply_to === req.message_id).every((m) => m.type === 'task.accepted')).toBe(true);
    const stale = peer.send({ type: 'task.status', task_id: 's1', timestamp: new Date(clock.now() - 301_000).toISOString() });
    expect((await peer.reply(stale.message_id)).payload.code).toBe('REPLAY_DETECTED');
  });

  it('refuses duplicate member names with MALFORMED_MESSAGE (spec: integrity#verification)', async () => {
    const peer = await signedSession();
    const msg = peer.build({ type: 'task.status', task_id: 't1' });
    const text = JSON.stringify(msg).replace('"payload":{}', '"payload":{},"payload":{}');
    peer.sendText(text);
    expect((await peer.reply(msg.message_id)).payload.code).toBe('MALFORMED_MESSAGE');
  });

  it('refuses integrity "none" from a peer it holds a key for with AUTH_REQUIRED, fatal (spec: integrity#negotiation)', async () => {
    const peer = new TestPeer(keyedAgent());
    const init = peer.init();
    const err = await peer.reply(init.message_id);
    expect(err.payload).toMatchObject({ code: 'AUTH_REQUIRED', fatal: true });
    await peer.until(() => peer.closed);
  });

  it('answers an init with an unknown key unsigned, fatal AUTH_REQUIRED, and one with a bad signature INVALID_SIGNATURE (spec: integrity#unsigned-errors)', async () => {
    const a = new TestPeer(keyedAgent());
    a.key = { keyId: 'k9', key: TEST_KEY_BYTES };
    const initA = a.init({ params: { integrity: { alg: 'hmac-sha256', key_id: 'k9' } } });
    const errA = await a.reply(initA.message_id);
    expect(errA.payload).toMatchObject({ code: 'AUTH_REQUIRED', fatal: true });
    expect(errA.signature).toBeUndefined();
    await a.until(() => a.closed);

    const b = new TestPeer(keyedAgent());
    b.key = { keyId: 'k1', key: new TextEncoder().encode('another key of thirty-two bytes!') };
    const initB = b.init(integrity);
    const errB = await b.reply(initB.message_id);
    expect(errB.payload).toMatchObject({ code: 'INVALID_SIGNATURE', fatal: true });
    expect(errB.signature).toBeUndefined();
  });

  it('refuses a key bound to another agent id with AUTH_REQUIRED (spec: integrity#keys)', async () => {
    const peer = new TestPeer(testAgent({ keys: [{ key_id: 'k1', key: TEST_KEY, peer: 'someone.else' }] }));
    peer.key = KEY;
    const init = peer.init(integrity);
    expect((await peer.reply(init.message_id)).payload.code).toBe('AUTH_REQUIRED');
  });

  it('lets sessions of one key principal share their tasks (spec: authorization#task-visibility)', async () => {
    const agent = keyedAgent();
    const a = new TestPeer(agent);
    a.key = KEY;
    await a.handshake(integrity);
    a.request('shared', 'tap.test.counter', { key: 'p' }, {}, { idempotency_key: 'P' });
    await a.result('shared');
    const b = new TestPeer(agent);
    b.key = KEY;
    await b.handshake(integrity);
    const status = b.send({ type: 'task.status', task_id: 'shared' });
    expect((await b.reply(status.message_id)).payload.state).toBe('completed');
    const retry = b.request('other', 'tap.test.counter', { key: 'p' }, {}, { idempotency_key: 'P' });
    expect(await b.reply(retry.message_id)).toMatchObject({ type: 'task.snapshot', task_id: 'shared' });
    // An unauthenticated session sees none of it.
    const c = new TestPeer(testAgent());
    await c.handshake();
    const hidden = c.send({ type: 'task.status', task_id: 'shared' });
    expect((await c.reply(hidden.message_id)).payload.code).toBe('UNKNOWN_TASK');
  });
});
