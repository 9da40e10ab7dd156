/**
 * The agent's caps on what peers make it hold: frames before the ack, sessions, connections,
 * unread output and slow HTTP headers (spec: limits#pre-handshake, limits#table-limits,
 * limits#back-pressure, bindings-websocket#close-codes).
 */
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryPair } from '../transports/memory.ts';
import { connectWebSocket, createWebSocketServer, type CloseInfo } from '../transports/index.ts';
import { agentCard, testAgent, TestPeer, expectCleanHistories, ManualClock } from './peer.testkit.ts';

afterEach(expectCleanHistories);

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

describe('frames before the ack (spec: limits#pre-handshake)', () => {
  it('refuses a 70 000-byte frame before handshake.ack with MESSAGE_TOO_LARGE though the card allows 1 MiB, then completes the handshake', async () => {
    const agent = testAgent({ card: agentCard({ max_message_bytes: 1_048_576 }) });
    const peer = new TestPeer(agent);
    const big = peer.send({ type: 'task.status', task_id: 'x', payload: { pad: 'p'.repeat(70_000) } });
    const refused = await peer.reply(big.message_id);
    expect(refused.payload).toMatchObject({ code: 'MESSAGE_TOO_LARGE', details: { max_message_bytes: 65_536 } });
    const fits = peer.send({ type: 'task.status', task_id: 'x', payload: { pad: 'p'.repeat(60_000) } });
    expect((await peer.reply(fits.message_id)).payload.code).toBe('HANDSHAKE_REQUIRED');
    await peer.handshake();
    // After the handshake the negotiated limit applies again.
    peer.request('e1', 'tap.test.echo', 'q'.repeat(200_000));
    expect((await peer.result('e1')).payload.output).toHaveLength(200_000);
  });
});

describe('sessions and connections (spec: limits#table-limits)', () => {
  it('refuses a new session beyond the session cap with BUSY and closes the transport; a resume still works', async () => {
    const agent = testAgent({ maxSessions: 1 });
    const first = new TestPeer(agent);
    await first.handshake();
    const second = new TestPeer(agent);
    const init = second.init();
    expect((await second.reply(init.message_id)).payload).toMatchObject({ code: 'BUSY' });
    await second.until(() => second.closed);
    await first.close();
    const again = new TestPeer(agent);
    const resume = again.init({ resume: { session_id: first.sessionId!, resume_token: first.resumeToken!, tasks: [] } });
    expect((await again.reply(resume.message_id)).payload).toMatchObject({ resumed: true });
  });

  it('closes a WebSocket connection beyond the connection cap with 1013 (spec: bindings-websocket#close-codes)', async () => {
    const agent = testAgent({ maxConnections: 1 });
    const listener = await agent.listen({ port: 0 });
    stops.push(() => agent.shutdown());
    const first = new TestPeer(await connectWebSocket(listener.url));
    await first.handshake();
    const extra = await connectWebSocket(listener.url);
    const closed = new Promise<number | undefined>((resolve) => (extra.onclose = (info) => resolve(info.code)));
    await extra.start();
    expect(await closed).toBe(1013);
    const ping = first.send({ type: 'ping' });
    expect((await first.reply(ping.message_id)).type).toBe('pong');
  });

  it('makes room in a full table by closing the oldest connection that began no session 250 ms after it opened, never a younger one (spec: limits#sources)', async () => {
    const clock = new ManualClock();
    const agent = testAgent({ maxConnections: 1, clock });
    const listener = await agent.listen({ port: 0 });
    // The shutdown's grace runs on the manual clock too.
    stops.push(async () => {
      const stopped = agent.shutdown();
      await clock.advance(60_000);
      await stopped;
    });
    const idle = await connectWebSocket(listener.url);
    const idleClosed = new Promise<CloseInfo>((resolve) => (idle.onclose = resolve));
    await idle.start();
    // 100 ms old: a new connection is refused, the idle one kept.
    await clock.advance(100);
    const early = await connectWebSocket(listener.url);
    const earlyClosed = new Promise<number | undefined>((resolve) => (early.onclose = (info) => resolve(info.code)));
    await early.start();
    expect(await earlyClosed).toBe(1013);
    // 300 ms old and still no session: it gives way to the next connection, which completes its handshake.
    await clock.advance(200);
    const next = new TestPeer(await connectWebSocket(listener.url));
    const info = await idleClosed;
    expect(info.code).toBe(1013);
    expect(info.reason).toContain('began no session');
    await next.handshake();
    const ping = next.send({ type: 'ping' });
    expect((await next.reply(ping.message_id)).type).toBe('pong');
  });

  it("closes a WebSocket connection over its address's share with 1013, naming the address (spec: limits#sources)", async () => {
    const agent = testAgent({ maxConnections: 10, maxConnectionsPerSource: 1 });
    const listener = await agent.listen({ port: 0 });
    stops.push(() => agent.shutdown());
    const first = new TestPeer(await connectWebSocket(listener.url));
    await first.handshake();
    const extra = await connectWebSocket(listener.url);
    const closed = new Promise<CloseInfo>((resolve) => (extra.onclose = resolve));
    await extra.start();
    const info = await closed;
    expect(info.code).toBe(1013);
    expect(info.reason).toContain('websocket:127.0.0.1 holds 1 connections');
    const ping = first.send({ type: 'ping' });
    expect((await first.reply(ping.message_id)).type).toBe('pong');
  });
});

describe('back-pressure (spec: limits#back-pressure)', () => {
  it('closes a connection whose peer leaves more than maxUnsentBytes unread, and keeps its session resumable', async () => {
    const agent = testAgent({ maxUnsentBytes: 1_000_000 });
    const [agentEnd, peerEnd] = createMemoryPair();
    let unread = 0;
    Object.assign(agentEnd, { unsentBytes: () => unread });
    agent.attach(agentEnd);
    const peer = new TestPeer(peerEnd);
    await peer.handshake();
    unread = 2_000_000;
    peer.send({ type: 'ping' });
    await peer.until(() => peer.closed);
    expect(agent.stats().sessions).toBe(1);
    const back = new TestPeer(agent);
    const resume = back.init({ resume: { session_id: peer.sessionId!, resume_token: peer.resumeToken!, tasks: [] } });
    expect((await back.reply(resume.message_id)).payload).toMatchObject({ resumed: true });
  });
});

describe('a WebSocket peer that never reads (spec: limits#back-pressure)', () => {
  it('drops it at once past maxUnsentBytes, reads none of its later frames, logs one line, and keeps its session resumable', async () => {
    const lines: string[] = [];
    const agent = testAgent({ maxUnsentBytes: 256 * 1024, logger: (level, message) => lines.push(`${level}: ${message}`) });
    let handled = 0;
    let handledAtCut = -1;
    const server = await createWebSocketServer({
      onSession: (transport) => {
        agent.attach(transport);
        // Counts the frames that reach the session, behind the transport.
        const deliver = transport.onmessage!;
        transport.onmessage = (frame) => {
          handled++;
          deliver(frame);
        };
      },
    });
    stops.push(() => server.close());
    stops.push(() => agent.shutdown());
    const client = await connectWebSocket(server.url);
    const peer = new TestPeer(client);
    await peer.handshake();
    // The client stops reading; its pings are answered with pongs nobody takes.
    client.socket.pause();
    (client.socket as unknown as { _socket: { pause(): void } })._socket.pause();
    const ping = (i: number) => JSON.stringify(peer.build({ type: 'ping', payload: { pad: 'p'.repeat(2000), i } }));
    let sent = 0;
    const logged = () => lines.filter((l) => l.includes('bytes unread')).length;
    while (logged() === 0 && sent < 100_000) {
      for (let i = 0; i < 200; i++) client.socket.send(ping(sent++));
      await new Promise((r) => setTimeout(r, 5));
    }
    handledAtCut = handled;
    // What the client sends after the cut never reaches the session.
    for (let i = 0; i < 2000; i++) if (client.socket.readyState === 1) client.socket.send(ping(sent++));
    await peer.until(() => agent.stats().connections === 0, 10_000);
    await new Promise((r) => setTimeout(r, 200));
    expect(logged()).toBe(1);
    expect(handled).toBe(handledAtCut);
    expect(handled).toBeLessThan(sent);
    expect(agent.stats().sessions).toBe(1);
    const back = new TestPeer(await connectWebSocket(server.url));
    const resume = back.init({ resume: { session_id: peer.sessionId!, resume_token: peer.resumeToken!, tasks: [] } });
    expect((await back.reply(resume.message_id)).payload).toMatchObject({ resumed: true });
  });
});

describe('a long stream to a peer that reads slowly (spec: limits#back-pressure)', () => {
  it('paces a handler that awaits its output to the reader, instead of closing the connection as lost', async () => {
    const maxUnsentBytes = 64_000;
    const agent = testAgent({ maxUnsentBytes });
    const [agentEnd, peerEnd] = createMemoryPair();
    // The agent's end holds what it sends until the peer "reads" it, every 5 ms.
    const deliver = agentEnd.send.bind(agentEnd);
    let slow = false;
    let unread = 0;
    let mostUnread = 0;
    let held: { text: string; taken: () => void }[] = [];
    Object.assign(agentEnd, {
      unsentBytes: () => unread,
      send: (text: string) => {
        if (!slow) return deliver(text);
        unread += text.length;
        mostUnread = Math.max(mostUnread, unread);
        return new Promise<void>((taken) => held.push({ text, taken }));
      },
    });
    agent.attach(agentEnd);
    const peer = new TestPeer(peerEnd);
    await peer.handshake({ params: { streaming: true } });
    slow = true;
    const reader = setInterval(() => {
      const now = held;
      held = [];
      unread = 0;
      for (const h of now) void deliver(h.text).then(h.taken);
    }, 5);
    try {
      const count = 2000;
      peer.request('s1', 'tap.test.stream', { count });
      const result = await peer.result('s1', 10_000);
      expect(result.payload).toMatchObject({ status: 'completed', output: { count } });
      expect(peer.closed).toBe(false);
      const outputs = peer.stream('s1').filter((m) => m.type === 'task.event' && m.payload.kind === 'output');
      expect(outputs.map((m) => m.payload.data.index)).toEqual(Array.from({ length: count }, (_, i) => i));
      // The stream's text was several times the bound, but the peer never had that much unread.
      expect(outputs.reduce((n, m) => n + JSON.stringify(m).length, 0)).toBeGreaterThan(4 * maxUnsentBytes);
      expect(mostUnread).toBeLessThanOrEqual(maxUnsentBytes);
    } finally {
      clearInterval(reader);
    }
  });
});

describe('HTTP headers (spec: limits#back-pressure)', () => {
  it('drops a client that trickles its upgrade request headers past the time-out', async () => {
    const server = await createWebSocketServer({ headersTimeoutMs: 300, onSession: () => {} });
    stops.push(() => server.close());
    const socket = connect(server.port, '127.0.0.1');
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write('GET /tap HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    const trickle = setInterval(() => socket.writable && socket.write('X-Slow: a\r\n'), 100);
    try {
      await closed;
    } finally {
      clearInterval(trickle);
    }
    expect(socket.destroyed).toBe(true);
  });
});
