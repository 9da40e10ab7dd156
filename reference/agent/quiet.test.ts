import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { JOURNAL_FILE } from './journal.ts';
import { testAgent, TestPeer, expectCleanHistories, type Msg } from './peer.testkit.ts';

afterEach(expectCleanHistories);

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function stateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tap-quiet-'));
  dirs.push(dir);
  return dir;
}

async function session(versions = ['1.1', '1.0']): Promise<TestPeer> {
  const peer = new TestPeer(testAgent());
  await peer.handshake({ versions });
  return peer;
}

const QUIET = { quiet: true };

describe('quiet tasks (spec: tasks#quiet-tasks)', () => {
  it('sends a quiet task its task.result alone, at sequence 2, and no direct reply (TAP-QUIET-101, TAP-QUIET-103)', async () => {
    const peer = await session();
    const req = peer.request('q1', 'tap.test.echo', { said: 'hi' }, QUIET);
    const result = await peer.result('q1');
    expect(result.payload).toEqual({ status: 'completed', output: { said: 'hi' } });
    expect(peer.stream('q1').map((m) => [m.type, m.sequence])).toEqual([['task.result', 2]]);
    expect(peer.received.filter((m) => m.reply_to === req.message_id)).toEqual([]);
    expect(peer.violations(true)).toEqual([]);
  });

  it('gives a quiet task the full stream in a session of 1.0 (TAP-QUIET-105)', async () => {
    const peer = await session(['1.0']);
    peer.request('q1', 'tap.test.echo', { said: 'hi' }, QUIET);
    await peer.result('q1');
    expect(peer.stream('q1').map((m) => [m.type, m.sequence])).toEqual([
      ['task.accepted', 1],
      ['task.event', 2],
      ['task.result', 3],
    ]);
  });

  it('answers status with the state and last_sequence 1, cancel with a snapshot then the cancelled result (TAP-QUIET-103)', async () => {
    const peer = await session();
    peer.request('q1', 'tap.test.sleep', { ms: 30_000 }, QUIET);
    let snap: Msg;
    do {
      const st = peer.send({ type: 'task.status', task_id: 'q1', payload: {} });
      snap = await peer.reply(st.message_id);
    } while (snap.payload.state === 'accepted');
    expect(snap.payload).toMatchObject({ state: 'running', last_sequence: 1 });
    const cancel = peer.send({ type: 'task.cancel', task_id: 'q1', payload: {} });
    expect((await peer.reply(cancel.message_id)).type).toBe('task.snapshot');
    const result = await peer.result('q1');
    expect(result.payload.status).toBe('cancelled');
    expect(peer.stream('q1').map((m) => [m.type, m.sequence])).toEqual([['task.result', 2]]);
  });

  it('replays the quiet stream on task.resume after 0 or 1, and nothing after 2 (spec: tasks#quiet-requests)', async () => {
    const peer = await session();
    peer.request('q1', 'tap.test.echo', { n: 1 }, QUIET);
    const result = await peer.result('q1');
    for (const last of [0, 1]) {
      const mark = peer.received.length;
      const resume = peer.send({ type: 'task.resume', task_id: 'q1', payload: { last_sequence: last } });
      expect((await peer.reply(resume.message_id)).payload.last_sequence).toBe(2);
      await peer.waitFor((m) => m.message_id === result.message_id, undefined, mark);
    }
    const mark = peer.received.length;
    const resume = peer.send({ type: 'task.resume', task_id: 'q1', payload: { last_sequence: 2 } });
    await peer.reply(resume.message_id);
    const ping = peer.send({ type: 'ping', payload: {} });
    await peer.reply(ping.message_id);
    expect(peer.received.slice(mark).filter((m) => m.task_id === 'q1' && m.type === 'task.result')).toEqual([]);
  });

  it('answers a duplicate of the quiet request with the result byte for byte, and a repeat under a new message_id with a snapshot (TAP-QUIET-104)', async () => {
    const peer = await session();
    const req = peer.request('q1', 'tap.test.counter', { key: 'quiet-dup' }, QUIET, { idempotency_key: 'k-quiet' });
    const result = await peer.result('q1');
    const mark = peer.received.length;
    peer.sendText(JSON.stringify(req));
    const again = await peer.waitFor((m) => m.message_id === result.message_id, undefined, mark);
    expect(JSON.stringify(again)).toBe(JSON.stringify(result));
    const repeat = peer.request('q1', 'tap.test.counter', { key: 'quiet-dup' }, QUIET, { idempotency_key: 'k-quiet' });
    const snap = await peer.reply(repeat.message_id);
    expect(snap.type).toBe('task.snapshot');
    expect(snap.payload.result).toEqual(result.payload);
    expect(peer.received.filter((m) => m.type === 'task.result' && m.task_id === 'q1').length).toBe(2);
  });

  it('sends a quiet task the plan it needs approved, then only its result (TAP-QUIET-102)', async () => {
    const peer = await session();
    peer.request(
      'q1',
      'tap.test.plan',
      {
        plan: {
          intent: 'Write a file.',
          steps: [{ action: 'write a', target: 'file://a', expected_output: 'a written', reversible: true }],
          rollback: 'Delete the file.',
          estimated_cost: { tokens: 10, seconds: 1 },
          risk_level: 'low',
        },
      },
      QUIET,
    );
    const submit = await peer.waitFor((m) => m.type === 'plan.submit' && m.task_id === 'q1');
    expect(submit.sequence).toBe(2);
    const decision = peer.send({
      type: 'plan.decision',
      task_id: 'q1',
      payload: { plan_id: submit.payload.plan.plan_id, decision: 'approved' },
    });
    expect((await peer.reply(decision.message_id)).type).toBe('task.snapshot');
    const result = await peer.result('q1');
    expect(result.sequence).toBe(3);
    expect(peer.stream('q1').map((m) => m.type)).toEqual(['plan.submit', 'task.result']);
  });

  it('hands a quiet task off at shutdown: task.handoff at 2, then the cancelled result at 3 (TAP-QUIET-102)', async () => {
    const peer = await session();
    peer.request('q1', 'tap.test.sleep', { ms: 60_000 }, QUIET);
    const st = peer.send({ type: 'task.status', task_id: 'q1', payload: {} });
    await peer.reply(st.message_id);
    const req = peer.send({ type: 'shutdown.request', payload: { reason: 'maintenance', grace_ms: 1000 } });
    expect((await peer.reply(req.message_id)).payload.approve).toBe(true);
    const result = await peer.result('q1');
    expect(result.payload).toMatchObject({ status: 'cancelled', error: { code: 'SHUTTING_DOWN' } });
    expect(peer.stream('q1').map((m) => `${m.type}@${m.sequence}`)).toEqual(['task.handoff@2', 'task.result@3']);
  });

  it('answers a refused quiet request with its error as today', async () => {
    const peer = await session();
    const req = peer.request('q1', 'tap.test.sleep', { ms: 'long' }, QUIET);
    const err = await peer.reply(req.message_id);
    expect(err.payload.code).toBe('INVALID_MESSAGE');
  });

  it('keeps a quiet task quiet across a crash: it resumes, and its stream is still its result at sequence 2 (spec: tasks#durability)', async () => {
    const dir = stateDir();
    const first = testAgent({ stateDir: dir });
    const a = new TestPeer(first);
    await a.handshake({ versions: ['1.1', '1.0'] });
    a.request('q1', 'tap.test.sleep', { ms: 300 }, QUIET);
    const st = a.send({ type: 'task.status', task_id: 'q1', payload: {} });
    expect((await a.reply(st.message_id)).payload).toMatchObject({ state: 'running', last_sequence: 1 });
    const image = stateDir();
    copyFileSync(join(dir, JOURNAL_FILE), join(image, JOURNAL_FILE));
    const seen = a.received.length;
    await first.shutdown();
    a.received.length = seen; // what the crashed agent never got to send

    const second = testAgent({ stateDir: image });
    const b = new TestPeer(second);
    b.quietTasks.add('q1');
    const resume = { session_id: a.sessionId, resume_token: a.resumeToken, tasks: [{ task_id: 'q1', last_sequence: 1 }] };
    const init = b.init({ versions: ['1.1', '1.0'], resume });
    const ack = await b.reply(init.message_id);
    expect(ack.payload).toMatchObject({ resumed: true, version: '1.1' });
    b.sessionId = ack.payload.session_id;
    b.version = '1.1';
    const ready = b.send({ type: 'handshake.ready', payload: { params: ack.payload.params } });
    await b.reply(ready.message_id);
    const result = await b.result('q1');
    expect(result.payload).toEqual({ status: 'completed', output: { slept_ms: 300 } });
    expect(b.stream('q1').map((m) => `${m.type}@${m.sequence}`)).toEqual(['task.result@2']);
    await second.shutdown();
  });
});
