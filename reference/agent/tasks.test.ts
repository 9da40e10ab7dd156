import { afterEach, describe, expect, it } from 'vitest';
import { createAgent } from './agent.ts';
import { withConformanceCapabilities } from './conformance-capabilities.ts';
import { agentCard, testAgent, TestPeer, expectCleanHistories } from './peer.testkit.ts';

afterEach(expectCleanHistories);

async function session(options: Parameters<typeof testAgent>[0] = {}, payload: Record<string, unknown> = {}): Promise<TestPeer> {
  const peer = new TestPeer(testAgent(options));
  await peer.handshake(payload);
  return peer;
}

describe('tasks', () => {
  it('streams tap.test.stream output events { index, chunk } then { count } with gap-free sequences (spec: tasks#sequences)', async () => {
    const peer = await session();
    peer.request('s1', 'tap.test.stream', { count: 3, chunk: 'ab' });
    peer.request('s2', 'tap.test.stream', { count: 2, interval_ms: 5 });
    const r1 = await peer.result('s1');
    const r2 = await peer.result('s2');
    expect(r1.payload).toEqual({ status: 'completed', output: { count: 3 } });
    expect(r2.payload).toEqual({ status: 'completed', output: { count: 2 } });
    const outputs = peer
      .stream('s1')
      .filter((m) => m.payload.kind === 'output')
      .map((m) => m.payload.data);
    expect(outputs).toEqual([
      { index: 0, chunk: 'ab' },
      { index: 1, chunk: 'ab' },
      { index: 2, chunk: 'ab' },
    ]);
    expect(
      peer
        .stream('s2')
        .filter((m) => m.payload.kind === 'output')
        .map((m) => m.payload.data),
    ).toEqual([{ index: 0 }, { index: 1 }]);
    expect(peer.stream('s1').map((m) => m.sequence)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(peer.violations(true)).toEqual([]);
  });

  it('sends no output events when the session does not stream (spec: tasks#events)', async () => {
    const peer = await session({}, { params: { streaming: false } });
    peer.request('s1', 'tap.test.stream', { count: 3 });
    expect((await peer.result('s1')).payload.output).toEqual({ count: 3 });
    expect(peer.stream('s1').some((m) => m.payload.kind === 'output')).toBe(false);
  });

  it('ends tap.test.fail failed with the code, message and registry retryable (spec: conformance#test-capabilities)', async () => {
    const peer = await session();
    peer.request('f1', 'tap.test.fail', { code: 'BUSY' });
    peer.request('f2', 'tap.test.fail', { code: 'PERMISSION_DENIED', retryable: true, message: 'nope' });
    expect((await peer.result('f1')).payload).toMatchObject({ status: 'failed', error: { code: 'BUSY', retryable: true } });
    expect((await peer.result('f2')).payload).toMatchObject({
      status: 'failed',
      error: { code: 'PERMISSION_DENIED', retryable: true, message: 'nope' },
    });
  });

  it('refuses input that fails the capability input_schema with INVALID_MESSAGE and creates no task (spec: conformance#test-capabilities)', async () => {
    const peer = await session();
    const bad = peer.request('b1', 'tap.test.sleep', { ms: 'long' });
    const err = await peer.reply(bad.message_id);
    expect(err.payload.code).toBe('INVALID_MESSAGE');
    expect(err.task_id).toBe('b1');
    expect(err.payload.details.issues[0].path).toMatch(/^\/payload\/input/);
    const status = peer.send({ type: 'task.status', task_id: 'b1' });
    expect((await peer.reply(status.message_id)).payload.code).toBe('UNKNOWN_TASK');
  });

  it('refuses an unknown capability with CAPABILITY_NOT_SUPPORTED and a payload error with INVALID_MESSAGE (spec: errors#order-of-checks)', async () => {
    const peer = await session();
    const a = peer.request('u1', 'no.such.thing', 1);
    expect((await peer.reply(a.message_id)).payload.code).toBe('CAPABILITY_NOT_SUPPORTED');
    const b = peer.send({ type: 'task.request', task_id: 'u2', payload: { input: 1 } });
    const err = await peer.reply(b.message_id);
    expect(err.payload.code).toBe('INVALID_MESSAGE');
    expect(err.payload.details.issues.some((i: { path: string }) => i.path === '/payload/capability')).toBe(true);
  });

  it('cancels a running task: snapshot, cancelling, cancelled; a repeat gets a snapshot; a completed task gets TASK_TERMINAL (spec: cancellation)', async () => {
    const peer = await session();
    const req = peer.request('c1', 'tap.test.sleep', { ms: 60_000 });
    await peer.waitFor((m) => m.task_id === 'c1' && m.payload.state === 'running');
    const cancel = peer.send({ type: 'task.cancel', task_id: 'c1', payload: { reason: 'enough' } });
    const snap = await peer.reply(cancel.message_id);
    expect(snap).toMatchObject({ type: 'task.snapshot', task_id: 'c1', payload: { state: 'running', last_sequence: 2 } });
    const result = await peer.result('c1');
    expect(result.payload).toEqual({ status: 'cancelled' });
    expect(peer.stream('c1').map((m) => m.payload.state ?? m.payload.status ?? m.type)).toEqual([
      'task.accepted',
      'running',
      'cancelling',
      'cancelled',
    ]);
    const again = peer.send({ type: 'task.cancel', task_id: 'c1' });
    expect((await peer.reply(again.message_id)).type).toBe('task.snapshot');
    peer.request('e1', 'tap.test.echo', 1);
    await peer.result('e1');
    const late = peer.send({ type: 'task.cancel', task_id: 'e1' });
    expect((await peer.reply(late.message_id)).payload.code).toBe('TASK_TERMINAL');
    expect(req.task_id).toBe('c1');
    expect(peer.violations(true)).toEqual([]);
  });

  it('gives a repeated cancel of a cancelling task a snapshot and no other effect (spec: cancellation#repeated-cancels)', async () => {
    const agent = createAgent({
      card: agentCard(),
      capabilities: {
        ...withConformanceCapabilities(),
        'x.stubborn': {
          capability: {
            name: 'x.stubborn',
            version: '1',
            description: 'ignores cancel for a while',
            input_formats: [],
            output_formats: [],
            streaming: false,
            side_effects: false,
          },
          handler: async () => {
            await new Promise((r) => setTimeout(r, 150));
            return { done: true };
          },
        },
      },
      logger: () => {},
    });
    const peer = new TestPeer(agent);
    await peer.handshake();
    peer.request('s1', 'x.stubborn', null);
    await peer.waitFor((m) => m.task_id === 's1' && m.payload.state === 'running');
    const c1 = peer.send({ type: 'task.cancel', task_id: 's1' });
    await peer.reply(c1.message_id);
    const c2 = peer.send({ type: 'task.cancel', task_id: 's1' });
    const snap = await peer.reply(c2.message_id);
    expect(snap.payload.state).toBe('cancelling');
    // The work had already succeeded: cancelling → completed.
    expect((await peer.result('s1')).payload).toEqual({ status: 'completed', output: { done: true } });
    expect(peer.stream('s1').filter((m) => m.payload.state === 'cancelling')).toHaveLength(1);
    const c3 = peer.send({ type: 'task.cancel', task_id: 's1' });
    expect((await peer.reply(c3.message_id)).payload.code).toBe('TASK_TERMINAL');
  });

  it('ends a task timed_out with DEADLINE_EXCEEDED at its effective deadline (spec: tasks#deadlines)', async () => {
    const peer = await session();
    // From the send: the acceptance may reach this test late on a loaded machine, the deadline cannot come early.
    const started = Date.now();
    const req = peer.request('d1', 'tap.test.sleep', { ms: 60_000 }, { timeout_ms: 80 });
    const accepted = await peer.reply(req.message_id);
    const result = await peer.result('d1');
    expect(Date.now() - started).toBeGreaterThanOrEqual(80);
    expect(result.payload).toMatchObject({ status: 'timed_out', error: { code: 'DEADLINE_EXCEEDED', retryable: false } });
    expect(Date.parse(accepted.payload.deadline)).toBeLessThanOrEqual(Date.now());
  });

  it('refuses a request past its envelope deadline with DEADLINE_EXCEEDED and creates no task (spec: tasks#deadlines)', async () => {
    const peer = await session();
    const req = peer.request('d2', 'tap.test.echo', 1, {}, { deadline: new Date(Date.now() - 1000).toISOString() });
    expect((await peer.reply(req.message_id)).payload.code).toBe('DEADLINE_EXCEEDED');
    const status = peer.send({ type: 'task.status', task_id: 'd2' });
    expect((await peer.reply(status.message_id)).payload.code).toBe('UNKNOWN_TASK');
  });

  it('ends failed MESSAGE_TOO_LARGE when the result would not fit, and splits large output across events (spec: limits#message-size)', async () => {
    const big = (n: number) => ({
      capability: {
        name: 'x.big',
        version: '1',
        description: 'big output',
        input_formats: [],
        output_formats: [],
        streaming: true,
        side_effects: false,
      },
      handler: (input: { text: boolean }, ctx: import('./handler.ts').TaskContext) => {
        if (input.text) {
          ctx.output('é'.repeat(n));
          ctx.output(Array.from({ length: n / 10 }, (_, i) => i));
          return 'done';
        }
        return 'x'.repeat(n);
      },
    });
    const agent = createAgent({
      card: agentCard(),
      capabilities: { ...withConformanceCapabilities(), 'x.big': big(3000) },
      logger: () => {},
    });
    const peer = new TestPeer(agent);
    await peer.handshake({ params: { max_message_bytes: 2048 } });
    peer.request('big', 'x.big', { text: false });
    expect((await peer.result('big')).payload).toMatchObject({ status: 'failed', error: { code: 'MESSAGE_TOO_LARGE' } });
    peer.request('chunks', 'x.big', { text: true });
    expect((await peer.result('chunks')).payload).toEqual({ status: 'completed', output: 'done' });
    const pieces = peer
      .stream('chunks')
      .filter((m) => m.payload.kind === 'output')
      .map((m) => m.payload.data);
    expect(pieces.filter((p) => typeof p === 'string').join('')).toBe('é'.repeat(3000));
    expect(pieces.filter((p) => Array.isArray(p)).flat()).toEqual(Array.from({ length: 300 }, (_, i) => i));
    expect(pieces.length).toBeGreaterThan(4);
    for (const text of peer.raw.slice(1)) expect(new TextEncoder().encode(text).length).toBeLessThanOrEqual(2048);
    expect(peer.violations(true)).toEqual([]);
  });

  it('ends failed MESSAGE_TOO_LARGE a result that fits in task.result but not in its snapshot, so every snapshot fits (spec: tasks#result-size)', async () => {
    const max = 4096;
    const peer = await session({}, { params: { max_message_bytes: max } });
    // Sizes that walk across the gap between a result's envelope and a snapshot's.
    for (let k = max - 700; k <= max - 250; k += 50) {
      const taskId = `s${k}`;
      const req = peer.request(taskId, 'tap.test.echo', 'a'.repeat(k));
      if ((await peer.reply(req.message_id)).type === 'error') continue;
      await peer.result(taskId);
      const status = peer.send({ type: 'task.status', task_id: taskId, message_id: `q${k}`.padEnd(128, '.') });
      await peer.reply(status.message_id);
    }
    for (const text of peer.raw.slice(1)) expect(new TextEncoder().encode(text).length).toBeLessThanOrEqual(max);
    const results = peer.received.filter((m) => m.type === 'task.result');
    expect(results.some((m) => m.payload.status === 'completed')).toBe(true);
    expect(results.some((m) => m.payload.error?.code === 'MESSAGE_TOO_LARGE')).toBe(true);
  });

  it('answers an oversized frame with MESSAGE_TOO_LARGE and keeps the session (spec: limits#message-size)', async () => {
    const peer = await session({}, { params: { max_message_bytes: 2048 } });
    const big = peer.request('o1', 'tap.test.echo', 'z'.repeat(5000));
    const err = await peer.reply(big.message_id);
    expect(err.payload.code).toBe('MESSAGE_TOO_LARGE');
    // Sent again, it gets the same error byte for byte: never two different replies to one request.
    peer.sendText(JSON.stringify(big));
    await peer.until(() => peer.raw.filter((t) => t.includes(`"reply_to":"${big.message_id}"`)).length === 2);
    const [first, second] = peer.raw.filter((t) => t.includes(`"reply_to":"${big.message_id}"`));
    expect(second).toBe(first);
    peer.sendText('{not json');
    expect((await peer.waitFor((m) => m.payload?.code === 'MALFORMED_MESSAGE')).type).toBe('error');
    const ok = peer.request('o2', 'tap.test.echo', 'small');
    expect((await peer.reply(ok.message_id)).type).toBe('task.accepted');
  });

  it('refuses tasks beyond the session cap with BUSY, retryable (spec: limits#concurrency)', async () => {
    const peer = await session({}, { params: { max_concurrent_tasks: 2 } });
    peer.request('b1', 'tap.test.sleep', { ms: 60_000 });
    peer.request('b2', 'tap.test.sleep', { ms: 60_000 });
    const third = peer.request('b3', 'tap.test.echo', 1);
    const err = await peer.reply(third.message_id);
    expect(err.payload).toMatchObject({ code: 'BUSY', retryable: true });
    const cancel = peer.send({ type: 'task.cancel', task_id: 'b1' });
    await peer.reply(cancel.message_id);
    await peer.result('b1');
    const fourth = peer.request('b4', 'tap.test.echo', 1);
    expect((await peer.reply(fourth.message_id)).type).toBe('task.accepted');
  });

  it('caps tasks per agent across sessions and per principal (spec: limits#concurrency)', async () => {
    const agent = testAgent({ card: agentCard({ max_concurrent_tasks: 1 }) });
    const a = new TestPeer(agent);
    const b = new TestPeer(agent);
    await a.handshake();
    await b.handshake();
    a.request('a1', 'tap.test.sleep', { ms: 60_000 });
    await a.waitFor((m) => m.task_id === 'a1');
    const req = b.request('b1', 'tap.test.echo', 1);
    expect((await b.reply(req.message_id)).payload).toMatchObject({ code: 'BUSY', details: { scope: 'agent' } });
  });

  it('answers task.status with the task as it stands (spec: tasks#status)', async () => {
    const peer = await session();
    peer.request('st', 'tap.test.echo', { a: 1 });
    await peer.result('st');
    const status = peer.send({ type: 'task.status', task_id: 'st' });
    const snap = await peer.reply(status.message_id);
    expect(snap.payload).toMatchObject({
      state: 'completed',
      capability: 'tap.test.echo',
      last_sequence: 3,
      result: { status: 'completed', output: { a: 1 } },
    });
  });
});
