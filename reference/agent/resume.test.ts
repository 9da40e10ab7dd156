import { afterEach, describe, expect, it } from 'vitest';
import { checkHistory } from '../core/history.ts';
import { flush, ManualClock, testAgent, TestPeer, type Msg, expectCleanHistories } from './peer.testkit.ts';

afterEach(expectCleanHistories);

function resumeInit(peer: TestPeer, old: TestPeer, tasks: { task_id: string; last_sequence: number }[], token = old.resumeToken!): Msg {
  return peer.init({ resume: { session_id: old.sessionId!, resume_token: token, tasks } });
}

async function completeHandshake(peer: TestPeer, init: Msg): Promise<Msg> {
  const ack = await peer.reply(init.message_id);
  peer.sessionId = ack.payload.session_id;
  peer.resumeToken = ack.payload.resume_token;
  const ready = peer.send({ type: 'handshake.ready', payload: { params: ack.payload.params } });
  expect((await peer.reply(ready.message_id)).type).toBe('handshake.go');
  return ack;
}

describe('resume', () => {
  it('answers task.resume with a snapshot, then replays the later messages byte for byte (spec: resume#task-resume)', async () => {
    const peer = new TestPeer(testAgent());
    await peer.handshake();
    peer.request('s1', 'tap.test.stream', { count: 3 });
    await peer.result('s1');
    const originals = peer.raw.filter((t) => t.includes('"task_id":"s1"') && t.includes('"sequence"'));
    const resume = peer.send({ type: 'task.resume', task_id: 's1', payload: { last_sequence: 2 } });
    const snap = await peer.reply(resume.message_id);
    expect(snap.payload).toMatchObject({ state: 'completed', last_sequence: 6 });
    await peer.until(() => peer.raw.length >= originals.length + 4 + 3);
    const index = peer.raw.findIndex((t) => t.includes(`"reply_to":"${resume.message_id}"`));
    expect(peer.raw.slice(index + 1)).toEqual(originals.slice(2));
    const none = peer.send({ type: 'task.resume', task_id: 's1', payload: { last_sequence: 6 } });
    await peer.reply(none.message_id);
    expect(await peer.quiet(50)).toEqual([]);
  });

  it('answers a resume before the earliest retained message with RESUME_UNAVAILABLE (spec: resume#retention)', async () => {
    const peer = new TestPeer(testAgent({ maxRetainedMessages: 3 }));
    const ack = await peer.handshake();
    expect(ack.payload.max_retained_messages).toBe(3);
    peer.request('s1', 'tap.test.stream', { count: 5 });
    await peer.result('s1');
    const resume = peer.send({ type: 'task.resume', task_id: 's1', payload: { last_sequence: 0 } });
    const err = await peer.reply(resume.message_id);
    expect(err.payload).toMatchObject({ code: 'RESUME_UNAVAILABLE', details: { earliest_sequence: 6 } });
    const ok = peer.send({ type: 'task.resume', task_id: 's1', payload: { last_sequence: 5 } });
    expect((await peer.reply(ok.message_id)).type).toBe('task.snapshot');
    await peer.until(() => peer.received.filter((m) => m.type === 'task.result').length === 2);
  });

  it('resumes a session on a new connection: same session and token, replay of the listed task, duplicates remembered (spec: resume#reconnect)', async () => {
    const agent = testAgent();
    const first = new TestPeer(agent);
    await first.handshake();
    const req = first.request('t1', 'tap.test.sleep', { ms: 150 });
    await first.waitFor((m) => m.task_id === 't1' && m.sequence === 2);
    await first.close();
    await new Promise((r) => setTimeout(r, 250));
    const second = new TestPeer(agent);
    const ack = await completeHandshake(second, resumeInit(second, first, [{ task_id: 't1', last_sequence: 2 }]));
    expect(ack.payload).toMatchObject({ resumed: true, session_id: first.sessionId, resume_token: first.resumeToken });
    const result = await second.result('t1');
    expect(result).toMatchObject({ sequence: 3, payload: { status: 'completed', output: { slept_ms: 150 } } });
    // The duplicate table carried over: the old request id gets its original reply.
    second.sendText(JSON.stringify({ ...req }));
    const again = await second.reply(req.message_id);
    expect(again).toMatchObject({ type: 'task.accepted', task_id: 't1', sequence: 1 });
    expect(checkHistory([...first.received, ...second.received])).toEqual([]);
  });

  it('closes the previous connection on a successful resume (spec: resume#reconnect)', async () => {
    const agent = testAgent();
    const first = new TestPeer(agent);
    await first.handshake();
    const second = new TestPeer(agent);
    await completeHandshake(second, resumeInit(second, first, []));
    await first.until(() => first.closed);
    const req = second.request('x', 'tap.test.echo', 1);
    expect((await second.reply(req.message_id)).type).toBe('task.accepted');
  });

  it('declines a resume with a wrong token without saying why, and the old session stays resumable (spec: resume#declined-resume)', async () => {
    const agent = testAgent();
    const first = new TestPeer(agent);
    await first.handshake();
    await first.close();
    const intruder = new TestPeer(agent);
    const ack = await completeHandshake(intruder, resumeInit(intruder, first, [], 'x'.repeat(43)));
    expect(ack.payload.resumed).toBe(false);
    expect(ack.payload.session_id).not.toBe(first.sessionId);
    const owner = new TestPeer(agent);
    expect((await completeHandshake(owner, resumeInit(owner, first, []))).payload.resumed).toBe(true);
  });

  it('answers listed tasks it cannot replay with UNKNOWN_TASK or RESUME_UNAVAILABLE after go (spec: resume#reconnect)', async () => {
    const agent = testAgent({ maxRetainedMessages: 2 });
    const first = new TestPeer(agent);
    await first.handshake();
    first.request('s1', 'tap.test.stream', { count: 3 });
    await first.result('s1');
    await first.close();
    const second = new TestPeer(agent);
    await completeHandshake(
      second,
      resumeInit(second, first, [
        { task_id: 'nope', last_sequence: 0 },
        { task_id: 's1', last_sequence: 1 },
      ]),
    );
    const unknown = await second.waitFor((m) => m.type === 'error' && m.task_id === 'nope');
    expect(unknown.payload.code).toBe('UNKNOWN_TASK');
    const gone = await second.waitFor((m) => m.type === 'error' && m.task_id === 's1');
    expect(gone.payload).toMatchObject({ code: 'RESUME_UNAVAILABLE', details: { earliest_sequence: 5 } });
  });

  it('ends the tasks of an orphaned session with SESSION_LOST after the resume window (spec: resume#orphans)', async () => {
    const clock = new ManualClock();
    const agent = testAgent({ clock, resumeWindowMs: 1_000 });
    const first = new TestPeer(agent, { now: () => clock.now() });
    await first.handshake();
    first.request('t1', 'tap.test.sleep', { ms: 60_000 });
    await first.waitFor((m) => m.task_id === 't1' && m.sequence === 2);
    await first.close();
    await flush();
    await clock.advance(999);
    expect(agent.stats().activeTasks).toBe(1);
    await clock.advance(1);
    expect(agent.stats().activeTasks).toBe(0);
    const second = new TestPeer(agent, { now: () => clock.now() });
    const ack = await completeHandshake(second, resumeInit(second, first, [{ task_id: 't1', last_sequence: 2 }]));
    expect(ack.payload.resumed).toBe(false);
  });

  it('keeps the tasks of an orphan resumable within the window, and their messages flow on resume (spec: resume#orphans)', async () => {
    const clock = new ManualClock();
    const agent = testAgent({ clock, resumeWindowMs: 1_000 });
    const first = new TestPeer(agent, { now: () => clock.now() });
    await first.handshake();
    first.request('t1', 'tap.test.sleep', { ms: 60_000 });
    await first.waitFor((m) => m.task_id === 't1' && m.sequence === 2);
    await first.close();
    await flush();
    await clock.advance(500);
    const second = new TestPeer(agent, { now: () => clock.now() });
    await completeHandshake(second, resumeInit(second, first, [{ task_id: 't1', last_sequence: 1 }]));
    const replayed = await second.waitFor((m) => m.task_id === 't1' && m.sequence === 2);
    expect(replayed.payload).toEqual({ kind: 'state', state: 'running' });
    await clock.advance(2_000);
    const cancel = second.send({ type: 'task.cancel', task_id: 't1' });
    const snap = await second.reply(cancel.message_id);
    expect(snap.payload.state, JSON.stringify(snap)).toBe('running');
    expect((await second.result('t1')).payload.status).toBe('cancelled');
  });
});
