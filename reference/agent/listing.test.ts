import { afterEach, describe, expect, it } from 'vitest';
import { testAgent, TestPeer, expectCleanHistories, type Msg } from './peer.testkit.ts';

afterEach(expectCleanHistories);

/** A peer of a 1.1 session, with `n` tasks of tap.test.echo ended. */
async function withTasks(agent = testAgent(), n = 0, prefix = 'e'): Promise<TestPeer> {
  const peer = new TestPeer(agent);
  await peer.handshake({ versions: ['1.1', '1.0'] });
  peer.version = '1.1';
  for (let i = 0; i < n; i++) peer.request(`${prefix}${i}`, 'tap.test.echo', i);
  for (let i = 0; i < n; i++) await peer.result(`${prefix}${i}`);
  return peer;
}

async function list(peer: TestPeer, payload: Msg = {}): Promise<Msg> {
  return peer.reply(peer.send({ type: 'task.list', payload }).message_id);
}

/** Every page of a listing, following next_cursor. */
async function walk(peer: TestPeer, payload: Msg = {}): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await list(peer, { ...payload, ...(cursor ? { cursor } : {}) });
    expect(page.type).toBe('task.page');
    pages++;
    ids.push(...page.payload.tasks.map((t: Msg) => t.task_id));
    cursor = page.payload.next_cursor;
  } while (cursor);
  return { ids, pages };
}

describe('task.list (spec: tasks#listing)', () => {
  it('pages through every task of the principal once, in acceptance order, as a snapshot shows each', async () => {
    const peer = await withTasks(testAgent(), 7);
    const { ids, pages } = await walk(peer, { limit: 3 });
    expect(ids).toEqual(['e0', 'e1', 'e2', 'e3', 'e4', 'e5', 'e6']);
    expect(pages).toBe(3);
    const first = await list(peer, { limit: 1 });
    const snapshot = await peer.reply(peer.send({ type: 'task.status', task_id: 'e0' }).message_id);
    const { result: _result, ...shown } = snapshot.payload;
    expect(first.payload.tasks[0]).toEqual({ task_id: 'e0', ...shown });
  });

  it('gives fewer tasks than the limit when a page of that many would not fit max_message_bytes, and the walk stays complete (spec: limits#message-size)', async () => {
    const peer = new TestPeer(testAgent());
    const ack = await peer.handshake({ versions: ['1.1', '1.0'], params: { max_message_bytes: 4096 } });
    expect(ack.payload.params.max_message_bytes).toBe(4096);
    peer.version = '1.1';
    const ids = Array.from({ length: 40 }, (_, i) => `long-task-id-of-this-listing-${String(i).padStart(3, '0')}`);
    for (const id of ids) {
      peer.request(id, 'tap.test.echo', id);
      await peer.result(id);
    }
    const first = await list(peer, { limit: 100 });
    expect(first.payload.tasks.length).toBeLessThan(40);
    expect(new TextEncoder().encode(JSON.stringify(first)).length).toBeLessThanOrEqual(4096);
    const { ids: listed, pages } = await walk(peer, { limit: 100 });
    expect(listed).toEqual(ids);
    expect(pages).toBeGreaterThan(1);
  });

  it('filters by state and by capability', async () => {
    const peer = await withTasks(testAgent(), 2);
    peer.request('f0', 'tap.test.fail', { code: 'CAPABILITY_FAILED' });
    await peer.result('f0');
    peer.request('s0', 'tap.test.sleep', { ms: 60_000 });
    await peer.waitFor((m) => m.type === 'task.event' && m.task_id === 's0' && m.payload.state === 'running');
    expect((await walk(peer, { state: 'failed' })).ids).toEqual(['f0']);
    expect((await walk(peer, { state: 'running' })).ids).toEqual(['s0']);
    expect((await walk(peer, { capability: 'tap.test.echo' })).ids).toEqual(['e0', 'e1']);
    expect((await walk(peer, { capability: 'tap.test.echo', state: 'failed' })).ids).toEqual([]);
  });

  it("never lists another principal's tasks, and refuses its cursor with INVALID_CURSOR", async () => {
    const agent = testAgent();
    const mine = await withTasks(agent, 3, 'm');
    const theirs = await withTasks(agent, 3, 't');
    expect((await walk(mine)).ids).toEqual(['m0', 'm1', 'm2']);
    expect((await walk(theirs)).ids).toEqual(['t0', 't1', 't2']);
    const cursor = (await list(theirs, { limit: 1 })).payload.next_cursor;
    const refused = await list(mine, { cursor });
    expect(refused.payload).toMatchObject({ code: 'INVALID_CURSOR', retryable: false });
  });

  it('refuses a forged cursor and one given for another filter with INVALID_CURSOR; a bad filter with INVALID_MESSAGE', async () => {
    const peer = await withTasks(testAgent(), 3);
    const cursor = (await list(peer, { limit: 1 })).payload.next_cursor as string;
    expect((await list(peer, { cursor: `${cursor}x` })).payload.code).toBe('INVALID_CURSOR');
    expect((await list(peer, { cursor: 'bm90IGEgY3Vyc29y' })).payload.code).toBe('INVALID_CURSOR');
    expect((await list(peer, { cursor, state: 'completed' })).payload.code).toBe('INVALID_CURSOR');
    expect((await list(peer, { cursor })).type).toBe('task.page');
    expect((await list(peer, { state: 'finished' })).payload.code).toBe('INVALID_MESSAGE');
    expect((await list(peer, { limit: 101 })).payload.code).toBe('INVALID_MESSAGE');
  });

  it('is not a message of a 1.0 session: UNKNOWN_MESSAGE_TYPE and no page (spec: versioning#tap-1-1)', async () => {
    const peer = new TestPeer(testAgent());
    await peer.handshake({ versions: ['1.0'] });
    const reply = await list(peer);
    expect(reply.type).toBe('error');
    expect(reply.payload.code).toBe('UNKNOWN_MESSAGE_TYPE');
    expect(peer.received.some((m) => m.type === 'task.page')).toBe(false);
  });
});

describe("the capability's own failure (spec: errors#capability-failed)", () => {
  it('ends CAPABILITY_FAILED, not retryable, in 1.1 and INTERNAL_ERROR with the same retryable in 1.0', async () => {
    const agent = testAgent();
    const newer = await withTasks(agent);
    newer.request('f1', 'tap.test.fail', { code: 'CAPABILITY_FAILED', message: 'the repository does not exist' });
    expect((await newer.result('f1')).payload).toEqual({
      status: 'failed',
      error: { code: 'CAPABILITY_FAILED', message: 'the repository does not exist', retryable: false },
    });
    newer.request('f2', 'tap.test.fail', { code: 'CAPABILITY_FAILED', retryable: true });
    expect((await newer.result('f2')).payload.error).toMatchObject({ code: 'CAPABILITY_FAILED', retryable: true });
    const older = new TestPeer(agent);
    await older.handshake({ versions: ['1.0'] });
    older.request('f3', 'tap.test.fail', { code: 'CAPABILITY_FAILED' });
    expect((await older.result('f3')).payload.error).toMatchObject({ code: 'INTERNAL_ERROR', retryable: false });
    const snapshot = await older.reply(older.send({ type: 'task.status', task_id: 'f3' }).message_id);
    expect(snapshot.payload.result.error.code).toBe('INTERNAL_ERROR');
    // No code of 1.1 reaches a session of 1.0, whoever asks for it (spec: versioning#tap-1-1).
    older.request('f4', 'tap.test.fail', { code: 'INVALID_CURSOR' });
    expect((await older.result('f4')).payload.error).toMatchObject({ code: 'INTERNAL_ERROR', retryable: false });
    newer.request('f5', 'tap.test.fail', { code: 'INVALID_CURSOR' });
    expect((await newer.result('f5')).payload.error).toMatchObject({ code: 'INVALID_CURSOR' });
  });
});
