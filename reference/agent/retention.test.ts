/**
 * Tasks and idempotency records under another principal's flood: kept per principal for at
 * least the retention window, BUSY instead of forgetting (spec: idempotency#keeping-records,
 * limits#table-limits).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock, testAgent, TestPeer, expectCleanHistories } from './peer.testkit.ts';

afterEach(expectCleanHistories);

async function flood(peer: TestPeer, prefix: string, n: number): Promise<{ results: number; busy: number }> {
  let results = 0;
  let busy = 0;
  for (let i = 0; i < n; i++) {
    const req = peer.request(`${prefix}${i}`, 'tap.test.echo', i);
    const reply = await peer.reply(req.message_id);
    if (reply.type === 'task.accepted') {
      await peer.result(`${prefix}${i}`);
      results++;
    } else if (reply.payload.code === 'BUSY') busy++;
  }
  return { results, busy };
}

describe('idempotency records under another principal’s traffic', () => {
  it('keeps the victim’s record while another principal floods tiny tasks: its retry does not run tap.test.counter again', async () => {
    const clock = new ManualClock();
    const agent = testAgent({ clock, maxTasksKeptPerPrincipal: 40, maxTasksKept: 60 });
    const victim = new TestPeer(agent, { now: () => clock.now() });
    await victim.handshake();
    victim.request('pay-1', 'tap.test.counter', { key: 'pay' }, {}, { idempotency_key: 'order-77' });
    expect((await victim.result('pay-1')).payload.output).toEqual({ key: 'pay', count: 1 });

    // Two other principals (anonymous sessions) each try to run far more tasks than the table keeps.
    const first = new TestPeer(agent, { now: () => clock.now() });
    await first.handshake();
    const second = new TestPeer(agent, { now: () => clock.now() });
    await second.handshake();
    expect(await flood(first, 'f', 50)).toEqual({ results: 40, busy: 10 });
    expect(await flood(second, 'g', 30)).toEqual({ results: 19, busy: 11 });

    const status = victim.send({ type: 'task.status', task_id: 'pay-1' });
    expect((await victim.reply(status.message_id)).payload).toMatchObject({ state: 'completed' });
    const retry = victim.request('pay-2', 'tap.test.counter', { key: 'pay' }, {}, { idempotency_key: 'order-77' });
    const answer = await victim.reply(retry.message_id);
    expect(answer).toMatchObject({ type: 'task.snapshot', task_id: 'pay-1', payload: { result: { output: { count: 1 } } } });
  }, 60_000);

  it('forgets tasks only once their retention has passed, and then takes new work again', async () => {
    const clock = new ManualClock();
    const agent = testAgent({ clock, maxTasksKeptPerPrincipal: 5, resumeWindowMs: 60_000 });
    const peer = new TestPeer(agent, { now: () => clock.now() });
    await peer.handshake();
    expect(await flood(peer, 'a', 6)).toEqual({ results: 5, busy: 1 });
    await clock.advance(59_000);
    expect(await flood(peer, 'b', 1)).toEqual({ results: 0, busy: 1 });
    await clock.advance(2_000);
    expect(await flood(peer, 'c', 2)).toEqual({ results: 2, busy: 0 });
    const gone = peer.send({ type: 'task.status', task_id: 'a0' });
    expect((await peer.reply(gone.message_id)).payload.code).toBe('UNKNOWN_TASK');
    const kept = peer.send({ type: 'task.status', task_id: 'a4' });
    expect((await peer.reply(kept.message_id)).type).toBe('task.snapshot');
  }, 60_000);

  it('says in the BUSY when room frees, and warns the operator once a minute which option to raise', async () => {
    const clock = new ManualClock();
    const warnings: string[] = [];
    const logger = (level: string, message: string): void => void (level === 'warn' && warnings.push(message));
    const agent = testAgent({ clock, maxTasksKeptPerPrincipal: 3, resumeWindowMs: 60_000, logger });
    const peer = new TestPeer(agent, { now: () => clock.now() });
    await peer.handshake();
    expect(await flood(peer, 'a', 3)).toEqual({ results: 3, busy: 0 });
    await clock.advance(20_000);
    const refused = async (id: string) => (await peer.reply(peer.request(id, 'tap.test.echo', 1).message_id)).payload;
    expect(await refused('b')).toMatchObject({
      code: 'BUSY',
      message:
        'the principal limit of 3 tasks kept is reached: a finished task is kept for the resume window (60 s), and room frees in 40 s',
      details: { scope: 'principal', limit: 3 },
    });
    await clock.advance(30_000);
    expect((await refused('c')).message).toMatch(/room frees in 10 s$/);
    expect(warnings).toEqual([
      expect.stringMatching(
        /^tasks refused BUSY: requester \S+ reached maxTasksKeptPerPrincipal \(3 tasks kept\) within the resume window \(60 s\); raise maxTasksKeptPerPrincipal or shorten resumeWindowMs/,
      ),
    ]);
    await clock.advance(11_000);
    expect(await flood(peer, 'd', 1)).toEqual({ results: 1, busy: 0 });
  }, 60_000);
});
