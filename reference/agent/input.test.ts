import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { JOURNAL_FILE } from './journal.ts';
import { expectCleanHistories, testAgent, TestPeer, type Msg } from './peer.testkit.ts';

afterEach(expectCleanHistories);

const SCHEMA = { type: 'object', properties: { colour: { enum: ['red', 'green'] } }, required: ['colour'] };

async function session11(): Promise<TestPeer> {
  const peer = new TestPeer(testAgent());
  await peer.handshake({ versions: ['1.1', '1.0'] });
  expect(peer.version).toBe('1.1');
  return peer;
}

async function asking(peer: TestPeer, taskId: string, payload: Msg = {}): Promise<Msg> {
  peer.request(taskId, 'tap.test.ask', { schema: SCHEMA, prompt: 'Which colour?' }, payload);
  return peer.waitFor((m) => m.type === 'input.request' && m.task_id === taskId);
}

function answer(peer: TestPeer, taskId: string, requestId: string, value: unknown): Msg {
  return peer.send({ type: 'input.response', task_id: taskId, payload: { request_id: requestId, answer: value } });
}

describe('input required (TAP 1.1)', () => {
  it('announces input_required, then asks; a matching answer resumes the task to its result (spec: tasks#input-request, tasks#input-response)', async () => {
    const peer = await session11();
    const ask = await asking(peer, 'i1');
    expect(ask.payload).toEqual({ request_id: expect.any(String), prompt: 'Which colour?', schema: SCHEMA });
    const before = peer.stream('i1').find((m) => m.sequence === ask.sequence - 1);
    expect(before?.payload).toEqual({ kind: 'state', state: 'input_required' });
    const status = peer.send({ type: 'task.status', task_id: 'i1' });
    expect((await peer.reply(status.message_id)).payload).toMatchObject({
      state: 'input_required',
      input_request: { request_id: ask.payload.request_id, prompt: 'Which colour?', schema: SCHEMA },
    });
    const reply = await peer.reply(answer(peer, 'i1', ask.payload.request_id, { colour: 'red' }).message_id);
    expect(reply.type).toBe('task.snapshot');
    expect(reply.payload.state).toBe('input_required');
    expect((await peer.result('i1')).payload).toEqual({ status: 'completed', output: { answer: { colour: 'red' } } });
    const after = peer.stream('i1').filter((m) => m.sequence > ask.sequence);
    expect(after.map((m) => m.payload.state ?? m.payload.status)).toEqual(['running', 'completed']);
    const done = peer.send({ type: 'task.status', task_id: 'i1' });
    expect((await peer.reply(done.message_id)).payload.input_request).toBeUndefined();
    expect(peer.violations(true)).toEqual([]);
  });

  it('refuses an answer that fails the schema with INVALID_ANSWER and keeps waiting (spec: tasks#input-response)', async () => {
    const peer = await session11();
    const ask = await asking(peer, 'i2');
    const wrong = await peer.reply(answer(peer, 'i2', ask.payload.request_id, { colour: 'blue' }).message_id);
    expect(wrong.payload).toMatchObject({
      code: 'INVALID_ANSWER',
      details: { issues: [expect.objectContaining({ path: '/payload/answer/colour' })] },
    });
    expect(await peer.quiet(30, (m) => m.task_id === 'i2' && m.type !== 'error')).toEqual([]);
    const other = await peer.reply(answer(peer, 'i2', 'input-99', { colour: 'red' }).message_id);
    expect(other.payload.code).toBe('PROTOCOL_VIOLATION');
    await peer.reply(answer(peer, 'i2', ask.payload.request_id, { colour: 'green' }).message_id);
    expect((await peer.result('i2')).payload.output).toEqual({ answer: { colour: 'green' } });
    const late = await peer.reply(answer(peer, 'i2', ask.payload.request_id, { colour: 'green' }).message_id);
    expect(late.payload.code).toBe('TASK_TERMINAL');
  });

  it('refuses an answer for a task that waits for no input, and for an unknown task (spec: tasks#input-response)', async () => {
    const peer = await session11();
    peer.request('s1', 'tap.test.sleep', { ms: 2000 });
    await peer.waitFor((m) => m.task_id === 's1' && m.payload?.state === 'running');
    expect((await peer.reply(answer(peer, 's1', 'input-1', 1).message_id)).payload.code).toBe('PROTOCOL_VIOLATION');
    expect((await peer.reply(answer(peer, 'nobody', 'input-1', 1).message_id)).payload.code).toBe('UNKNOWN_TASK');
    await peer.reply(peer.send({ type: 'task.cancel', task_id: 's1' }).message_id);
    await peer.result('s1');
  });

  it('cancels a waiting task through cancelling, and ends one whose deadline passes timed_out (spec: tasks#input-waiting)', async () => {
    const peer = await session11();
    const ask = await asking(peer, 'c1');
    await peer.reply(peer.send({ type: 'task.cancel', task_id: 'c1' }).message_id);
    expect((await peer.result('c1')).payload.status).toBe('cancelled');
    const states = peer.stream('c1').filter((m) => m.sequence > ask.sequence);
    expect(states.map((m) => m.payload.state ?? m.payload.status)).toEqual(['cancelling', 'cancelled']);
    await asking(peer, 'd1', { timeout_ms: 40 });
    expect((await peer.result('d1')).payload).toMatchObject({ status: 'timed_out', error: { code: 'DEADLINE_EXCEEDED' } });
  });

  it('refuses an answer during shutdown and hands the task off with its pending request (spec: shutdown#input-shutdown)', async () => {
    const peer = await session11();
    const ask = await asking(peer, 'h1');
    const stop = peer.send({ type: 'shutdown.request', payload: { reason: 'test', grace_ms: 4000 } });
    expect((await peer.reply(stop.message_id)).payload.approve).toBe(true);
    const refused = await peer.reply(answer(peer, 'h1', ask.payload.request_id, { colour: 'red' }).message_id);
    expect(refused.payload).toMatchObject({ code: 'SHUTTING_DOWN', retryable: true });
    const handoff = await peer.waitFor((m) => m.type === 'task.handoff' && m.task_id === 'h1');
    expect(handoff.payload.input_request).toEqual(ask.payload);
    expect((await peer.result('h1')).payload).toMatchObject({ status: 'cancelled', error: { code: 'SHUTTING_DOWN' } });
  });

  it('in a session of 1.0, shows no tap.test.ask, fails a task that asks CAPABILITY_NOT_SUPPORTED and knows no input.response (spec: tasks#input-request)', async () => {
    const peer = new TestPeer(testAgent());
    const ack = await peer.handshake();
    expect(peer.version).toBe('1.0');
    // 1.0 reserves the name tap.test.ask without defining it: the card of a 1.0 session leaves it out.
    expect(ack.payload.agent.capabilities.map((c: Msg) => c.name)).not.toContain('tap.test.ask');
    const ack11 = await new TestPeer(testAgent()).handshake({ versions: ['1.1', '1.0'] });
    expect(ack11.payload.agent.capabilities.map((c: Msg) => c.name)).toContain('tap.test.ask');
    peer.request('v1', 'tap.test.ask', { schema: SCHEMA });
    expect((await peer.result('v1')).payload).toMatchObject({
      status: 'failed',
      error: { code: 'CAPABILITY_NOT_SUPPORTED', details: { reason: 'input_required' } },
    });
    expect(peer.received.some((m) => m.type === 'input.request' || m.payload?.state === 'input_required')).toBe(false);
    const stray = await peer.reply(answer(peer, 'v1', 'input-1', 1).message_id);
    expect(stray.payload.code).toBe('UNKNOWN_MESSAGE_TYPE');
  });

  it('waits again for the same request after a restart, and takes its answer (spec: tasks#durability)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-input-'));
    const image = mkdtempSync(join(tmpdir(), 'tap-input-crash-'));
    try {
      const first = testAgent({ stateDir: dir });
      const a = new TestPeer(first);
      await a.handshake({ versions: ['1.1', '1.0'] });
      const ask = await asking(a, 'r1');
      // The journal as a crash at this instant would leave it; then the first process goes away.
      copyFileSync(join(dir, JOURNAL_FILE), join(image, JOURNAL_FILE));
      const seen = a.received.length;
      await first.shutdown();
      a.received.length = seen;
      const second = testAgent({ stateDir: image });
      const b = new TestPeer(second);
      b.version = '1.1';
      const init = b.init({ versions: ['1.1', '1.0'], resume: { session_id: a.sessionId, resume_token: a.resumeToken, tasks: [] } });
      const ack = await b.reply(init.message_id);
      b.sessionId = ack.payload.session_id;
      await b.reply(b.send({ type: 'handshake.ready', payload: { params: ack.payload.params } }).message_id);
      const status = await b.reply(b.send({ type: 'task.status', task_id: 'r1' }).message_id);
      expect(status.payload).toMatchObject({ state: 'input_required', input_request: { request_id: ask.payload.request_id } });
      await b.reply(answer(b, 'r1', ask.payload.request_id, { colour: 'green' }).message_id);
      expect((await b.result('r1')).payload).toEqual({ status: 'completed', output: { answer: { colour: 'green' } } });
      await second.shutdown();
    } finally {
      rmSync(dir, { recursive: true, force: true });
      rmSync(image, { recursive: true, force: true });
    }
  });
});
