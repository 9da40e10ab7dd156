import { afterEach, describe, expect, it } from 'vitest';
import { testAgent, TestPeer, expectCleanHistories } from './peer.testkit.ts';

afterEach(expectCleanHistories);

async function session(): Promise<TestPeer> {
  const peer = new TestPeer(testAgent());
  await peer.handshake();
  return peer;
}

const count = async (peer: TestPeer, taskId: string): Promise<number> => (await peer.result(taskId)).payload.output.count;

describe('duplicates and idempotency', () => {
  it('re-sends the original reply byte for byte for a duplicate message_id and runs nothing twice (spec: idempotency#duplicate-messages)', async () => {
    const peer = await session();
    const req = peer.request('k1', 'tap.test.counter', { key: 'dup' });
    await peer.result('k1');
    void peer.end.send(JSON.stringify(req));
    await peer.until(() => peer.raw.filter((t) => t.includes('"task.accepted"')).length === 2);
    const accepted = peer.raw.filter((t) => t.includes('"task.accepted"'));
    expect(accepted[1]).toBe(accepted[0]);
    const status = peer.send({ type: 'task.status', task_id: 'k1' });
    await peer.reply(status.message_id);
    void peer.end.send(JSON.stringify(status));
    await peer.until(() => peer.received.filter((m) => m.reply_to === status.message_id).length === 2);
    const [a, b] = peer.raw.filter((t) => t.includes(`"reply_to":"${status.message_id}"`));
    expect(b).toBe(a);
    peer.request('k2', 'tap.test.counter', { key: 'dup' });
    expect(await count(peer, 'k2')).toBe(2);
  });

  it('re-sends an error reply for a duplicate too (spec: idempotency#duplicate-messages)', async () => {
    const peer = await session();
    const bad = peer.request('x1', 'no.such', 1);
    await peer.reply(bad.message_id);
    void peer.end.send(JSON.stringify(bad));
    await peer.until(() => peer.received.filter((m) => m.reply_to === bad.message_id).length === 2);
    const [a, b] = peer.raw.filter((t) => t.includes(`"reply_to":"${bad.message_id}"`));
    expect(b).toBe(a);
  });

  it('answers a repeated task_id with the same request by a snapshot, and a different one by TASK_EXISTS (spec: idempotency#task-id-reuse)', async () => {
    const peer = await session();
    peer.request('t1', 'tap.test.counter', { key: 'reuse' });
    expect(await count(peer, 't1')).toBe(1);
    const again = peer.request('t1', 'tap.test.counter', { key: 'reuse' });
    const snap = await peer.reply(again.message_id);
    expect(snap).toMatchObject({ type: 'task.snapshot', task_id: 't1', payload: { state: 'completed' } });
    const other = peer.request('t1', 'tap.test.counter', { key: 'other' });
    expect((await peer.reply(other.message_id)).payload.code).toBe('TASK_EXISTS');
    peer.request('t2', 'tap.test.counter', { key: 'reuse' });
    expect(await count(peer, 't2')).toBe(2);
  });

  it('answers a repeated idempotency key with the original task snapshot under its own task_id, and runs the counter once (spec: idempotency#idempotency-keys)', async () => {
    const peer = await session();
    peer.request('i1', 'tap.test.counter', { key: 'idem' }, {}, { idempotency_key: 'K' });
    expect(await count(peer, 'i1')).toBe(1);
    const retry = peer.request('i2', 'tap.test.counter', { key: 'idem' }, {}, { idempotency_key: 'K', metadata: { attempt: 2 } });
    const snap = await peer.reply(retry.message_id);
    expect(snap).toMatchObject({ type: 'task.snapshot', task_id: 'i1', payload: { state: 'completed', result: { output: { count: 1 } } } });
    const conflict = peer.request('i3', 'tap.test.counter', { key: 'changed' }, {}, { idempotency_key: 'K' });
    expect((await peer.reply(conflict.message_id)).payload.code).toBe('IDEMPOTENCY_CONFLICT');
    // The key is per capability: the same key for another capability is a new task.
    const echo = peer.request('i4', 'tap.test.echo', 1, {}, { idempotency_key: 'K' });
    expect((await peer.reply(echo.message_id)).type).toBe('task.accepted');
    peer.request('i5', 'tap.test.counter', { key: 'idem' });
    expect(await count(peer, 'i5')).toBe(2);
  });

  it('re-checks authorization before answering a retry with a snapshot (spec: idempotency#idempotency-keys)', async () => {
    const peer = await session();
    const grant = { permissions: ['tap.test.write'], resources: [], expires_at: new Date(Date.now() + 60_000).toISOString() };
    peer.request('g1', 'tap.test.guarded', {}, { authorization: grant }, { idempotency_key: 'G' });
    await peer.result('g1');
    const expired = { ...grant, expires_at: new Date(Date.now() - 1000).toISOString() };
    const retry = peer.request('g2', 'tap.test.guarded', {}, { authorization: expired }, { idempotency_key: 'G' });
    expect((await peer.reply(retry.message_id)).payload.code).toBe('AUTHORIZATION_EXPIRED');
    const noGrant = peer.request('g1', 'tap.test.guarded', {});
    expect((await peer.reply(noGrant.message_id)).payload.code).toBe('PERMISSION_DENIED');
    const ok = peer.request('g3', 'tap.test.guarded', {}, { authorization: grant }, { idempotency_key: 'G' });
    expect((await peer.reply(ok.message_id)).type).toBe('task.snapshot');
  });

  it('releases the key after a retryable ending: the retry is a new task naming the old one; the old task_id gets the old snapshot (spec: idempotency#retryable-endings)', async () => {
    const peer = await session();
    peer.request('r1', 'tap.test.fail', { code: 'BUSY' }, {}, { idempotency_key: 'R' });
    expect((await peer.result('r1')).payload.error.retryable).toBe(true);
    const retry = peer.request('r2', 'tap.test.fail', { code: 'BUSY' }, {}, { idempotency_key: 'R' });
    const accepted = await peer.reply(retry.message_id);
    expect(accepted).toMatchObject({ type: 'task.accepted', task_id: 'r2', payload: { previous_task_id: 'r1' } });
    await peer.result('r2');
    const status = peer.send({ type: 'task.status', task_id: 'r2' });
    expect((await peer.reply(status.message_id)).payload.previous_task_id).toBe('r1');
    const old = peer.request('r1', 'tap.test.fail', { code: 'BUSY' }, {}, { idempotency_key: 'R' });
    expect(await peer.reply(old.message_id)).toMatchObject({ type: 'task.snapshot', task_id: 'r1' });
    // A non-retryable ending keeps the key.
    peer.request('n1', 'tap.test.fail', { code: 'PLAN_REJECTED' }, {}, { idempotency_key: 'N' });
    await peer.result('n1');
    const again = peer.request('n2', 'tap.test.fail', { code: 'PLAN_REJECTED' }, {}, { idempotency_key: 'N' });
    expect(await peer.reply(again.message_id)).toMatchObject({ type: 'task.snapshot', task_id: 'n1' });
  });

  it('runs the counter once per key under duplicates and retries (spec: idempotency#keeping-records)', async () => {
    const peer = await session();
    const first = peer.request('c1', 'tap.test.counter', { key: 'once' }, {}, { idempotency_key: 'once' });
    for (let i = 0; i < 5; i++) void peer.end.send(JSON.stringify(first));
    for (let i = 2; i < 6; i++) peer.request(`c${i}`, 'tap.test.counter', { key: 'once' }, {}, { idempotency_key: 'once' });
    expect(await count(peer, 'c1')).toBe(1);
    await peer.quiet(50);
    peer.request('probe', 'tap.test.counter', { key: 'once' });
    expect(await count(peer, 'probe')).toBe(2);
    expect(peer.received.filter((m) => m.type === 'task.result' && m.task_id === 'c1')).toHaveLength(1);
  });
});
