/**
 * Shares of a source: a session table that one origin cannot fill for everyone, orphaned sessions
 * without unfinished tasks giving way before BUSY, and the unfinished tasks of one origin's
 * anonymous sessions counted as one principal's (spec: limits#sources).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Agent } from './agent.ts';
import type { AgentOptions } from './options.ts';
import { createMemoryPair } from '../transports/memory.ts';
import { agentCard, requesterCard, TEST_KEY, TEST_KEY_BYTES, testAgent, TestPeer, expectCleanHistories, type Msg } from './peer.testkit.ts';

afterEach(expectCleanHistories);

/** A requester whose connection comes from `origin`, as a WebSocket or NATS listener would mark it. */
function peerFrom(agent: Agent, origin?: string): TestPeer {
  const [agentEnd, peerEnd] = createMemoryPair();
  if (origin !== undefined) Object.assign(agentEnd, { origin });
  agent.attach(agentEnd);
  return new TestPeer(peerEnd);
}

/** The requester the key k1 is bound to: its sessions have the principal agent:signed.requester. */
const SIGNED = 'signed.requester';
const KEYS = [{ key_id: 'k1', key: TEST_KEY, peer: SIGNED }];

/** A signed session of SIGNED from `origin`. */
async function signedSession(agent: Agent, origin: string): Promise<TestPeer> {
  const peer = peerFrom(agent, origin);
  peer.source = SIGNED;
  peer.key = { keyId: 'k1', key: TEST_KEY_BYTES };
  await peer.handshake({ agent: { ...requesterCard, agent_id: SIGNED }, params: { integrity: { alg: 'hmac-sha256', key_id: 'k1' } } });
  return peer;
}

/** An agent whose log lines are kept. */
function loggingAgent(options: Partial<AgentOptions>): { agent: Agent; lines: string[] } {
  const lines: string[] = [];
  const agent = testAgent({ logger: (level, message) => lines.push(`${level}: ${message}`), ...options });
  return { agent, lines };
}

/** The reply to a fresh handshake.init from `origin`. */
async function opening(agent: Agent, origin: string): Promise<{ peer: TestPeer; reply: Msg }> {
  const peer = peerFrom(agent, origin);
  const init = peer.init();
  const reply = await peer.reply(init.message_id);
  return { peer, reply };
}

async function session(agent: Agent, origin?: string): Promise<TestPeer> {
  const peer = peerFrom(agent, origin);
  await peer.handshake();
  return peer;
}

/** Resumes `old`'s session on a new connection from `origin`; the ack says whether it was granted. */
async function resume(agent: Agent, old: TestPeer, origin: string): Promise<Msg> {
  const peer = peerFrom(agent, origin);
  const init = peer.init({ resume: { session_id: old.sessionId!, resume_token: old.resumeToken!, tasks: [] } });
  return (await peer.reply(init.message_id)).payload;
}

describe('a full session table (spec: limits#sources)', () => {
  it('ends an orphaned session with no unfinished task to admit a new one, instead of refusing BUSY; its resume is then declined', async () => {
    const { agent, lines } = loggingAgent({ maxSessions: 2 });
    const orphan = await session(agent, 'websocket:10.0.0.1');
    await orphan.close();
    await session(agent, 'websocket:10.0.0.2');
    const { reply } = await opening(agent, 'websocket:10.0.0.3');
    expect(reply.type).toBe('handshake.ack');
    expect(lines.filter((l) => l.includes(`ended orphaned session ${orphan.sessionId}`))).toHaveLength(1);
    expect(agent.stats().sessions).toBeLessThanOrEqual(2);
    expect((await resume(agent, orphan, 'websocket:10.0.0.1')).resumed).toBe(false);
  });

  it('keeps an orphaned session whose task still runs, and a live one, and refuses the new session BUSY', async () => {
    const agent = testAgent({ maxSessions: 2 });
    const busy = await session(agent, 'websocket:10.0.0.1');
    busy.request('long', 'tap.test.sleep', { ms: 30_000 });
    await busy.waitFor((m) => m.type === 'task.accepted');
    await busy.close();
    const live = await session(agent, 'websocket:10.0.0.2');
    const { peer, reply } = await opening(agent, 'websocket:10.0.0.3');
    expect(reply.payload).toMatchObject({ code: 'BUSY', details: { scope: 'agent', limit: 2 } });
    expect(reply.payload.message).toContain('none is orphaned without unfinished tasks');
    await peer.until(() => peer.closed);
    expect((await resume(agent, busy, 'websocket:10.0.0.1')).resumed).toBe(true);
    const ping = live.send({ type: 'ping' });
    expect((await live.reply(ping.message_id)).type).toBe('pong');
    await agent.shutdown();
  });

  it('ends first the longest-orphaned session of the source that holds the most sessions', async () => {
    const { agent, lines } = loggingAgent({ maxSessions: 3 });
    const other = await session(agent, 'websocket:10.0.0.9');
    await other.close();
    const first = await session(agent, 'websocket:10.0.0.1');
    await first.close();
    const second = await session(agent, 'websocket:10.0.0.1');
    await second.close();
    expect((await opening(agent, 'websocket:10.0.0.5')).reply.type).toBe('handshake.ack');
    // 10.0.0.9's orphan is older, but 10.0.0.1 holds two sessions: its oldest one gives way.
    expect(lines.filter((l) => l.includes('ended orphaned session'))).toEqual([
      expect.stringContaining(`ended orphaned session ${first.sessionId} of anonymous requesters from websocket:10.0.0.1`),
    ]);
  });

  it('checks a resume that is declined like a new session: it cannot slip past the cap', async () => {
    const agent = testAgent({ maxSessions: 1 });
    await session(agent, 'websocket:10.0.0.1');
    const peer = peerFrom(agent, 'websocket:10.0.0.2');
    const init = peer.init({ resume: { session_id: 'AAAAAAAAAAAAAAAAAAAAAA', resume_token: 'x'.repeat(43), tasks: [] } });
    expect((await peer.reply(init.message_id)).payload).toMatchObject({ code: 'BUSY' });
    expect(agent.stats().sessions).toBe(1);
  });
});

describe("a source's share of sessions (spec: limits#sources)", () => {
  it('refuses a source over its share BUSY (scope source) while another source still gets in', async () => {
    const agent = testAgent({ maxSessions: 100, maxSessionsPerSource: 2 });
    await session(agent, 'websocket:10.0.0.1');
    const kept = await session(agent, 'websocket:10.0.0.1');
    const { peer, reply } = await opening(agent, 'websocket:10.0.0.1');
    expect(reply.payload).toMatchObject({ code: 'BUSY', details: { scope: 'source', limit: 2 } });
    expect(reply.payload.message).toContain('anonymous requesters from websocket:10.0.0.1 hold 2 sessions');
    await peer.until(() => peer.closed);
    expect((await opening(agent, 'websocket:10.0.0.2')).reply.type).toBe('handshake.ack');
    // Once one of its sessions is orphaned without tasks, the source's next session takes its place.
    await kept.close();
    expect((await opening(agent, 'websocket:10.0.0.1')).reply.type).toBe('handshake.ack');
  });

  it('one origin that opens and abandons 300 sessions locks nobody out: each of its sessions, and everyone else, gets in (session lockout)', async () => {
    const agent = testAgent({ maxSessions: 64 });
    const attacker = 'nats';
    let refused = 0;
    for (let i = 0; i < 300; i++) {
      const { peer, reply } = await opening(agent, attacker);
      if (reply.type !== 'handshake.ack') refused++;
      else {
        const ready = peer.send({
          type: 'handshake.ready',
          session_id: reply.payload.session_id,
          payload: { params: reply.payload.params },
        });
        await peer.reply(ready.message_id);
      }
      await peer.close();
    }
    expect(refused).toBe(0);
    // The attacker's sessions never exceed its share, a quarter of the table.
    expect(agent.stats().sessions).toBeLessThanOrEqual(16);
    expect((await opening(agent, 'websocket:10.0.0.2')).reply.type).toBe('handshake.ack');
    expect((await opening(agent, attacker)).reply.type).toBe('handshake.ack');
  });

  it('counts an authenticated principal as its own source, apart from the origin it connects from', async () => {
    const agent = testAgent({ maxSessionsPerSource: 1, keys: KEYS });
    await session(agent, 'websocket:10.0.0.1');
    expect((await opening(agent, 'websocket:10.0.0.1')).reply.payload).toMatchObject({ code: 'BUSY' });
    const signed = await signedSession(agent, 'websocket:10.0.0.1');
    expect(signed.sessionId).toBeDefined();
  });
});

describe("one origin's anonymous tasks (spec: limits#sources)", () => {
  it('counts the unfinished tasks of three anonymous sessions from one origin against max_tasks_per_principal; other sources still run theirs', async () => {
    const agent = testAgent({
      card: agentCard({ max_concurrent_tasks: 8, max_tasks_per_principal: 3, max_tasks_per_session: 8 }),
      keys: KEYS,
    });
    const attackers = [await session(agent, 'nats'), await session(agent, 'nats'), await session(agent, 'nats')];
    const replies: Msg[] = [];
    for (let i = 0; i < 6; i++) {
      const peer = attackers[i % 3]!;
      const sent = peer.request(`a${i}`, 'tap.test.sleep', { ms: 30_000 });
      replies.push(await peer.reply(sent.message_id));
    }
    expect(replies.filter((r) => r.type === 'task.accepted')).toHaveLength(3);
    const refusal = replies.find((r) => r.type === 'error')!;
    expect(refusal.payload).toMatchObject({ code: 'BUSY', details: { scope: 'principal', limit: 3 } });
    expect(refusal.payload.message).toContain('anonymous requesters from nats');
    const other = await session(agent, 'websocket:10.0.0.2');
    const theirs = other.request('b1', 'tap.test.sleep', { ms: 30_000 });
    expect((await other.reply(theirs.message_id)).type).toBe('task.accepted');
    const signed = await signedSession(agent, 'nats');
    const mine = signed.request('c1', 'tap.test.sleep', { ms: 30_000 });
    expect((await signed.reply(mine.message_id)).type).toBe('task.accepted');
    await agent.shutdown();
  });

  it('leaves anonymous sessions apart where the binding cannot tell origins (stdio, memory)', async () => {
    const agent = testAgent({ card: agentCard({ max_concurrent_tasks: 8, max_tasks_per_principal: 1 }) });
    const one = await session(agent);
    const two = await session(agent);
    const a = one.request('t1', 'tap.test.sleep', { ms: 30_000 });
    const b = two.request('t2', 'tap.test.sleep', { ms: 30_000 });
    expect((await one.reply(a.message_id)).type).toBe('task.accepted');
    expect((await two.reply(b.message_id)).type).toBe('task.accepted');
    await agent.shutdown();
  });
});
