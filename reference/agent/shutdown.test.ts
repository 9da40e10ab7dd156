import { afterEach, describe, expect, it } from 'vitest';
import { checkHistory } from '../core/history.ts';
import { createAgent } from './agent.ts';
import type { TaskContext } from './handler.ts';
import { withConformanceCapabilities } from './conformance-capabilities.ts';
import { peerErrorLine } from './shutdown.ts';
import { agentCard, REQUESTER_ID, TEST_KEY, TEST_KEY_BYTES, testAgent, TestPeer, type Msg, expectCleanHistories } from './peer.testkit.ts';

afterEach(expectCleanHistories);

const plan = {
  intent: 'One step.',
  steps: [{ action: 'do it', target: 'x', expected_output: 'done', reversible: true }],
  rollback: 'none',
  estimated_cost: {},
  risk_level: 'low',
};

const summary = (peer: TestPeer, taskId: string): string[] =>
  peer
    .stream(taskId)
    .map((m) =>
      m.type === 'task.event'
        ? (m.payload.state ?? m.payload.kind)
        : m.type === 'task.result'
          ? `result:${m.payload.status}:${m.payload.error?.code ?? ''}`
          : m.type,
    );

describe('shutdown', () => {
  it('approves shutdown.request, hands off each unfinished task, ends it cancelled SHUTTING_DOWN, says farewell and closes (spec: shutdown#shutdown-sequence)', async () => {
    const agent = testAgent();
    const peer = new TestPeer(agent);
    await peer.handshake();
    peer.request('done', 'tap.test.echo', 1);
    await peer.result('done');
    peer.request('sleep', 'tap.test.sleep', { ms: 60_000 });
    peer.request('plan', 'tap.test.plan', { plan });
    await peer.waitFor((m) => m.type === 'plan.submit');
    const req = peer.send({ type: 'shutdown.request', payload: { reason: 'maintenance', grace_ms: 1000 } });
    const response = await peer.reply(req.message_id);
    expect(response).toMatchObject({ type: 'shutdown.response', payload: { approve: true } });
    const farewell = await peer.waitFor((m) => m.type === 'session.farewell');
    expect(farewell.payload.reason).toBe('maintenance');
    await peer.until(() => peer.closed);
    expect(summary(peer, 'sleep')).toEqual(['task.accepted', 'running', 'task.handoff', 'cancelling', 'result:cancelled:SHUTTING_DOWN']);
    expect(summary(peer, 'plan')).toEqual([
      'task.accepted',
      'running',
      'plan.submit',
      'task.handoff',
      'cancelling',
      'result:cancelled:SHUTTING_DOWN',
    ]);
    expect(peer.stream('sleep').find((m) => m.type === 'task.result')!.payload.error.retryable).toBe(true);
    const handoff = peer.stream('plan').find((m) => m.type === 'task.handoff')!;
    expect(handoff.payload).toMatchObject({
      completed_steps: [],
      remaining_steps: ['do it'],
      checkpoint: expect.any(Object),
      resume_hint: expect.any(String),
    });
    expect(peer.received.indexOf(farewell)).toBe(peer.received.length - 1);
    expect(summary(peer, 'done')).toEqual(['task.accepted', 'running', 'result:completed:']);
    expect(peer.violations(true)).toEqual([]);
  });

  it('refuses new work with SHUTTING_DOWN during the sequence but still answers status and pings; a repeat request is approved again (spec: shutdown#shutdown-sequence)', async () => {
    const peer = new TestPeer(testAgent({ drainMs: 300 }));
    await peer.handshake();
    peer.request('sleep', 'tap.test.sleep', { ms: 60_000 });
    await peer.waitFor((m) => m.task_id === 'sleep' && m.sequence === 2);
    const first = peer.send({ type: 'shutdown.request', payload: { reason: 'r', grace_ms: 2000 } });
    await peer.reply(first.message_id);
    const work = peer.request('new', 'tap.test.echo', 1);
    expect((await peer.reply(work.message_id)).payload).toMatchObject({ code: 'SHUTTING_DOWN', retryable: true });
    const status = peer.send({ type: 'task.status', task_id: 'sleep' });
    expect((await peer.reply(status.message_id)).payload.state).toBe('running');
    const ping = peer.send({ type: 'ping' });
    expect((await peer.reply(ping.message_id)).type).toBe('pong');
    const second = peer.send({ type: 'shutdown.request', payload: { reason: 'again', grace_ms: 2000 } });
    expect((await peer.reply(second.message_id)).payload.approve).toBe(true);
    await peer.until(() => peer.closed);
    expect(peer.received.filter((m) => m.type === 'session.farewell')).toHaveLength(1);
    expect(summary(peer, 'sleep').at(-1)).toBe('result:cancelled:SHUTTING_DOWN');
  });

  it('lets running tasks finish within the drain time instead of handing them off (spec: shutdown#shutdown-sequence)', async () => {
    const peer = new TestPeer(testAgent({ drainMs: 1000 }));
    await peer.handshake();
    peer.request('short', 'tap.test.sleep', { ms: 100 });
    await peer.waitFor((m) => m.task_id === 'short' && m.sequence === 2);
    peer.send({ type: 'shutdown.request', payload: { reason: 'r', grace_ms: 5000 } });
    await peer.waitFor((m) => m.type === 'session.farewell');
    expect(summary(peer, 'short')).toEqual(['task.accepted', 'running', 'result:completed:']);
  });

  it('ends a side-effecting task non-retryable with its checkpoint, keeping its idempotency key (spec: idempotency#retryable-endings)', async () => {
    const agent = createAgent({
      card: agentCard(),
      capabilities: {
        ...withConformanceCapabilities(),
        'x.effect': {
          capability: {
            name: 'x.effect',
            version: '1',
            description: 'an effect, then a long wait',
            input_formats: [],
            output_formats: [],
            streaming: false,
            side_effects: true,
          },
          handler: async (_input: unknown, ctx: TaskContext) => {
            await ctx.sideEffect(() => undefined);
            ctx.checkpoint({ wrote: true }, { completed: ['write'], remaining: ['wait'] });
            await ctx.sleep(60_000);
          },
        },
      },
      logger: () => {},
    });
    const peer = new TestPeer(agent);
    await peer.handshake();
    peer.request('fx', 'x.effect', null, {}, { idempotency_key: 'FX' });
    await peer.waitFor((m) => m.task_id === 'fx' && m.sequence === 2);
    await new Promise((r) => setTimeout(r, 20));
    peer.send({ type: 'shutdown.request', payload: { reason: 'r', grace_ms: 1000 } });
    const result = await peer.result('fx');
    expect(result.payload).toMatchObject({
      status: 'cancelled',
      error: { code: 'SHUTTING_DOWN', retryable: false, details: { checkpoint: { wrote: true } } },
    });
    const handoff = peer.stream('fx').find((m) => m.type === 'task.handoff')!;
    expect(handoff.payload).toMatchObject({ checkpoint: { wrote: true }, completed_steps: ['write'], remaining_steps: ['wait'] });
  });

  it('ends the session at once on the requester farewell, handing off and saying farewell; no resume afterwards (spec: shutdown#requester-farewell)', async () => {
    const agent = testAgent();
    const peer = new TestPeer(agent);
    await peer.handshake();
    peer.request('sleep', 'tap.test.sleep', { ms: 60_000 });
    await peer.waitFor((m) => m.task_id === 'sleep' && m.sequence === 2);
    peer.send({ type: 'session.farewell', payload: { reason: 'bye' } });
    await peer.waitFor((m) => m.type === 'session.farewell');
    expect(summary(peer, 'sleep').at(-1)).toBe('result:cancelled:SHUTTING_DOWN');
    await peer.until(() => peer.closed);
    const again = new TestPeer(agent);
    const init = again.init({ resume: { session_id: peer.sessionId, resume_token: peer.resumeToken, tasks: [] } });
    expect((await again.reply(init.message_id)).payload.resumed).toBe(false);
  });

  it('shuts every session down on a process-wide shutdown, once, and refuses new connections (spec: shutdown#signals)', async () => {
    const agent = testAgent();
    const a = new TestPeer(agent);
    const b = new TestPeer(agent);
    await a.handshake();
    await b.handshake();
    a.request('a1', 'tap.test.sleep', { ms: 60_000 });
    await a.waitFor((m) => m.task_id === 'a1' && m.sequence === 2);
    const first = agent.shutdown('signal');
    expect(agent.shutdown('again')).toBe(first);
    await first;
    await agent.stopped;
    for (const p of [a, b]) {
      await p.until(() => p.closed);
      expect(p.received.filter((m: Msg) => m.type === 'session.farewell')).toHaveLength(1);
    }
    expect(summary(a, 'a1').at(-1)).toBe('result:cancelled:SHUTTING_DOWN');
    expect(checkHistory(a.received, undefined, { complete: true })).toEqual([]);
    const late = new TestPeer(agent);
    await late.until(() => late.closed);
  });

  it('stops the whole process on a shutdown.request from a principal holding tap.admin.shutdown (spec: shutdown#scope)', async () => {
    const agent = testAgent({ keys: [{ key_id: 'k1', key: TEST_KEY, peer: REQUESTER_ID }], adminPrincipals: [`agent:${REQUESTER_ID}`] });
    const other = new TestPeer(agent);
    other.key = { keyId: 'k1', key: TEST_KEY_BYTES };
    await other.handshake({ params: { integrity: { alg: 'hmac-sha256', key_id: 'k1' } } });
    const admin = new TestPeer(agent);
    admin.key = { keyId: 'k1', key: TEST_KEY_BYTES };
    await admin.handshake({ params: { integrity: { alg: 'hmac-sha256', key_id: 'k1' } } });
    admin.send({ type: 'shutdown.request', payload: { reason: 'stop all', grace_ms: 1000 } });
    await agent.stopped;
    await other.until(() => other.closed);
  });

  it('ends only the requesting session on a plain shutdown.request (spec: shutdown#scope)', async () => {
    const agent = testAgent();
    const a = new TestPeer(agent);
    const b = new TestPeer(agent);
    await a.handshake();
    await b.handshake();
    a.send({ type: 'shutdown.request', payload: { reason: 'just me', grace_ms: 100 } });
    await a.until(() => a.closed);
    const req = b.request('b1', 'tap.test.echo', 1);
    expect((await b.reply(req.message_id)).type).toBe('task.accepted');
  });
});

describe("the log line of a peer's error", () => {
  it('names the code as the registry spells it, and says when the peer spelt it otherwise or sent none (spec: errors#registry)', async () => {
    const lines: string[] = [];
    const peer = new TestPeer(testAgent({ logger: (level, message) => lines.push(`${level}: ${message}`) }));
    await peer.handshake();
    const message = 'Task echo-1 has already completed.';
    peer.send({ type: 'error', payload: { code: 'TASK_TERMINAL', message, retryable: false } });
    peer.send({ type: 'error', payload: { code: 'task_terminal', message, retryable: false } });
    peer.send({ type: 'error', payload: { code: 'lowercase-code', retryable: 'maybe' } });
    peer.send({ type: 'error', payload: { code: 'A_CODE_OF_A_LATER_MINOR', message: 'future', retryable: false } });
    expect(await peer.quiet(100)).toEqual([]);
    expect(lines.filter((l) => l.includes('the requester sent'))).toEqual([
      `info: the requester sent error TASK_TERMINAL: ${message}`,
      `info: the requester sent error TASK_TERMINAL, spelt "task_terminal", which is not a TAP error code: ${message}`,
      'info: the requester sent an error whose code "lowercase-code" is not a TAP error code (upper-case letters, digits and _, as in TASK_TERMINAL): (no message)',
      'info: the requester sent error A_CODE_OF_A_LATER_MINOR: future',
    ]);
  });

  it('says what a payload without a code or with one of another type carried', () => {
    expect(peerErrorLine({ message: 'm' })).toBe(
      'the requester sent an error whose code none is not a TAP error code (upper-case letters, digits and _, as in TASK_TERMINAL): m',
    );
    expect(peerErrorLine({ code: 42, message: 'm' })).toContain('whose code 42 is not a TAP error code');
    expect(peerErrorLine({ code: 'Busy', message: 'm' })).toBe(
      'the requester sent error BUSY, spelt "Busy", which is not a TAP error code: m',
    );
  });
});
