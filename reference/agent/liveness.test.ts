import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryPair } from '../transports/memory.ts';
import { flush, ManualClock, testAgent, TestPeer, expectCleanHistories } from './peer.testkit.ts';

afterEach(expectCleanHistories);

async function quietSession(stdio = false): Promise<{ clock: ManualClock; peer: TestPeer; agent: ReturnType<typeof testAgent> }> {
  const clock = new ManualClock();
  const agent = testAgent({ clock, heartbeatMs: 1_000, resumeWindowMs: 60_000 });
  const peer = new TestPeer(agent, { now: () => clock.now(), stdio });
  peer.autoPong = false;
  await peer.handshake();
  return { clock, peer, agent };
}

const pings = (peer: TestPeer) => peer.received.filter((m) => m.type === 'ping');

describe('liveness', () => {
  it('pings after heartbeat_ms of silence and not before; any message counts as life (spec: limits#heartbeats)', async () => {
    const { clock, peer } = await quietSession();
    await clock.advance(999);
    expect(pings(peer)).toHaveLength(0);
    peer.send({ type: 'pong', reply_to: 'nothing' });
    await flush();
    await clock.advance(999);
    expect(pings(peer)).toHaveLength(0);
    await clock.advance(1);
    await peer.until(() => pings(peer).length === 1);
    expect(pings(peer)[0]).toMatchObject({ session_id: peer.sessionId, payload: {} });
  });

  it('counts the peer gone after three unanswered pings and orphans the session (spec: limits#heartbeats)', async () => {
    const { clock, peer, agent } = await quietSession();
    peer.request('t1', 'tap.test.sleep', { ms: 600_000 });
    await peer.waitFor((m) => m.task_id === 't1' && m.sequence === 2);
    await clock.advance(3_000);
    expect(pings(peer)).toHaveLength(3);
    expect(peer.closed).toBe(false);
    await clock.advance(999);
    expect(peer.closed).toBe(false);
    await clock.advance(1);
    await peer.until(() => peer.closed);
    expect(agent.stats()).toMatchObject({ sessions: 1, activeTasks: 1 });
  });

  it('keeps a session whose peer answers the pings (spec: limits#heartbeats)', async () => {
    const { clock, peer } = await quietSession();
    for (let i = 0; i < 6; i++) {
      await clock.advance(1_000);
      for (const ping of pings(peer))
        if (!peer.received.some((m) => m.reply_to === ping.message_id)) peer.send({ type: 'pong', reply_to: ping.message_id });
      await flush();
    }
    expect(peer.closed).toBe(false);
  });

  it('ends the tasks of a stdio session with SESSION_LOST as soon as the peer is gone (spec: bindings-stdio#session)', async () => {
    const { clock, peer, agent } = await quietSession(true);
    peer.request('t1', 'tap.test.sleep', { ms: 600_000 });
    await peer.waitFor((m) => m.task_id === 't1' && m.sequence === 2);
    await clock.advance(4_000);
    await peer.until(() => peer.closed);
    await flush();
    expect(agent.stats()).toMatchObject({ sessions: 0, activeTasks: 0 });
    expect(peer.stream('t1').at(-1)!.payload).toMatchObject({ status: 'cancelled', error: { code: 'SESSION_LOST' } });
    expect(peer.received.some((m) => m.type === 'session.farewell')).toBe(false);
  });
});

describe('a transport error', () => {
  const epipe = (): Error => Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });
  /** A session through a memory pair whose agent's log lines are kept as "level: message". */
  const loggedSession = async () => {
    const lines: string[] = [];
    const agent = testAgent({ logger: (level, message) => lines.push(`${level}: ${message}`) });
    const [agentEnd, peerEnd] = createMemoryPair();
    agent.attach(agentEnd);
    const peer = new TestPeer(peerEnd);
    await peer.handshake();
    return { lines, agentEnd, peer };
  };

  it("logs a peer that went away mid-write (EPIPE, ECONNRESET) at info, as the close it is, and the transport's other errors at warn", async () => {
    const { lines, agentEnd } = await loggedSession();
    agentEnd.onerror!(epipe());
    agentEnd.onerror!(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
    agentEnd.onerror!(new Error('a frame the socket could not parse'));
    expect(lines.filter((l) => l.includes('transport: '))).toEqual([
      'info: transport: the peer went away (write EPIPE)',
      'info: transport: the peer went away (read ECONNRESET)',
      'warn: transport: a frame the socket could not parse',
    ]);
  });

  it('logs a send that failed because the peer went away at debug (the transport error said it at info), and any other failed send at warn', async () => {
    const { lines, agentEnd, peer } = await loggedSession();
    // A transport of someone else's may reject with anything: a string, or nothing at all.
    const failures: unknown[] = [epipe(), new Error('the disk is on fire'), 'the pipe is full', undefined];
    agentEnd.send = () => Promise.reject(failures.shift());
    for (let i = 0; i < 4; i++) peer.send({ type: 'ping' });
    await flush();
    expect(lines.filter((l) => l.includes('send failed: '))).toEqual([
      'debug: send failed: the peer went away (write EPIPE)',
      'warn: send failed: the disk is on fire',
      'warn: send failed: the pipe is full',
      'warn: send failed: a failure without an Error (undefined)',
    ]);
  });

  it('logs a failure once when several sends share its promise (a transport that writes a turn at once)', async () => {
    const { lines, agentEnd, peer } = await loggedSession();
    const shared = Promise.reject(new Error('the pipe broke'));
    agentEnd.send = () => shared;
    for (let i = 0; i < 3; i++) peer.send({ type: 'ping' });
    await flush();
    expect(lines.filter((l) => l.includes('send failed: '))).toEqual(['warn: send failed: the pipe broke']);
  });
});
