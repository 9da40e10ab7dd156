import { request as httpRequest } from 'node:http';
import { connect as netConnect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import type { CloseInfo, InboundFrame } from './transport.ts';
import { connectWebSocket, createWebSocketServer, type WebSocketTransport } from './websocket.ts';
import { Cleanup, text, waitFor } from './transport.testkit.ts';

const cleanup = new Cleanup();
afterEach(() => cleanup.run());

/** Opens a raw TCP connection, upgrades it by hand, and hands back the socket. */
function rawUpgrade(port: number): Promise<import('node:net').Socket> {
  return new Promise((resolve, reject) => {
    const socket = netConnect(port, '127.0.0.1', () => {
      socket.write(
        'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
          'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n' +
          'Sec-WebSocket-Protocol: tap.v1\r\n\r\n',
      );
    });
    socket.on('error', () => {});
    socket.once('data', (d) => (d.toString().startsWith('HTTP/1.1 101') ? resolve(socket) : reject(new Error(d.toString()))));
  });
}

describe('createWebSocketServer', () => {
  it('listens on 127.0.0.1 on a free port and serves one transport per connection', async () => {
    let serverSide: WebSocketTransport | undefined;
    const server = await cleanup.server({
      onSession: (t) => {
        serverSide = t;
        t.onmessage = (f) => void t.send(text(f));
        void t.start();
      },
    });
    expect(server.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/$/);
    const t = await cleanup.client(server.url);
    expect(t.protocol).toBe('tap.v1');
    const reply = waitFor<InboundFrame>((done) => (t.onmessage = done));
    await t.start();
    await t.send('{"type":"ping"}');
    const frame = await reply;
    expect(text(frame)).toBe('{"type":"ping"}');
    expect(frame).toMatchObject({ oversized: false, byteLength: 15 });
    expect(frame.binary).toBeUndefined();
    expect(server.sessions.size).toBe(1);
    expect(serverSide!.socket.listenerCount('error')).toBeGreaterThan(0);
  });

  it('refuses a client that does not offer the subprotocol tap.v1 with HTTP 400 (spec: bindings#websocket)', async () => {
    let sessions = 0;
    const server = await cleanup.server({ onSession: () => sessions++ });
    await expect(connectWebSocket(server.url, { protocols: [] })).rejects.toThrow(
      /HTTP 400 Bad Request: TAP needs the WebSocket subprotocol tap\.v1/,
    );
    await expect(connectWebSocket(server.url, { protocols: ['mcp'] })).rejects.toThrow(/HTTP 400/);
    expect(sessions).toBe(0);
  });

  it('chooses tap.v1 when the client offers it among others', async () => {
    const server = await cleanup.server();
    const t = await connectWebSocket(server.url, { protocols: ['other', 'tap.v1'] });
    cleanup.add(() => t.close());
    expect(t.protocol).toBe('tap.v1');
  });

  it('accepts sessions only on its path, and says which path to use', async () => {
    const server = await cleanup.server({ path: '/tap' });
    expect(server.url).toMatch(/\/tap$/);
    const wrong = server.url.replace(/\/tap$/, '/other');
    await expect(connectWebSocket(wrong)).rejects.toThrow(/HTTP 404 Not Found: No TAP endpoint at \/other; try \/tap/);
    await expect(cleanup.client(server.url)).resolves.toBeDefined();
  });

  it('answers a plain HTTP request with 426 Upgrade Required', async () => {
    const server = await cleanup.server();
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const req = httpRequest(server.url.replace('ws:', 'http:'), (res) => {
        res.resume();
        resolve(res.statusCode);
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(426);
  });

  it('serves 200 concurrent connections, each echoing its own messages', async () => {
    const server = await cleanup.server();
    const results = await Promise.all(
      Array.from({ length: 200 }, async (_, n) => {
        const t = await cleanup.client(server.url);
        const got: string[] = [];
        const all = waitFor<void>((done) => {
          t.onmessage = (f) => {
            got.push(text(f));
            if (got.length === 5) done();
          };
        });
        await t.start();
        for (let i = 0; i < 5; i++) void t.send(`{"conn":${n},"i":${i}}`);
        await all;
        return got.every((g, i) => g === `{"conn":${n},"i":${i}}`);
      }),
    );
    expect(results.every(Boolean)).toBe(true);
    expect(server.sessions.size).toBe(200);
  }, 20_000);

  it('survives a client that breaks the WebSocket protocol, closing it with 1002', async () => {
    const errors: Error[] = [];
    const closes: CloseInfo[] = [];
    const server = await cleanup.server({
      onSession: (t) => {
        t.onerror = (e) => errors.push(e);
        t.onclose = (i) => closes.push(i);
        t.onmessage = (f) => void t.send(text(f));
        void t.start();
      },
    });
    const socket = await rawUpgrade(server.port);
    const closeFrame = waitFor<Buffer>((done) => socket.once('data', done));
    // An unmasked client frame followed by noise.
    socket.write(Buffer.from([0x81, 0x05, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0xff, 0xff, 0xff]));
    const frame = await closeFrame;
    expect([frame[0], frame.readUInt16BE(2)]).toEqual([0x88, 1002]);
    socket.destroy();
    await waitFor<void>((done) => socket.once('close', () => done()));
    await expect.poll(() => closes.length).toBe(1);
    expect(closes[0].code).toBe(1002);
    expect(errors).toHaveLength(1);
    const t = await cleanup.client(server.url);
    const reply = waitFor<InboundFrame>((done) => (t.onmessage = done));
    await t.start();
    await t.send('{}');
    expect(text(await reply)).toBe('{}');
  });

  it('survives bytes that are not even HTTP', async () => {
    const server = await cleanup.server();
    await new Promise<void>((resolve) => {
      const socket = netConnect(server.port, '127.0.0.1', () => socket.end(Buffer.from([0, 1, 2, 0xff, 13, 10, 13, 10])));
      socket.on('error', () => {});
      socket.on('close', () => resolve());
      socket.resume();
    });
    await expect(cleanup.client(server.url)).resolves.toBeDefined();
  });

  it('closes every session with 1001 when it closes', async () => {
    const server = await createWebSocketServer({ onSession: (t) => void t.start() });
    const clients = await Promise.all([connectWebSocket(server.url), connectWebSocket(server.url)]);
    const closes = clients.map((t) => waitFor<CloseInfo>((done) => (t.onclose = done)));
    await Promise.all(clients.map((t) => t.start()));
    await server.close();
    expect((await Promise.all(closes)).map((i) => i.code)).toEqual([1001, 1001]);
  });

  it('closes a session with 1011 when onSession throws', async () => {
    const server = await cleanup.server({
      onSession: () => {
        throw new Error('setup failed');
      },
    });
    const t = await cleanup.client(server.url);
    const closed = waitFor<CloseInfo>((done) => (t.onclose = done));
    await t.start();
    expect((await closed).code).toBe(1011);
  });
});

describe('connectWebSocket', () => {
  it('rejects with a clear message when nothing listens', async () => {
    const server = await createWebSocketServer({ onSession: () => {} });
    const url = server.url;
    await server.close();
    await expect(connectWebSocket(url)).rejects.toThrow(`could not connect to ${url}: connection refused`);
  });

  it('rejects with a clear message when the server does not speak tap.v1', async () => {
    const plain = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: () => false });
    await new Promise((r) => plain.once('listening', r));
    cleanup.add(() => new Promise<void>((r) => plain.close(() => r())));
    const url = `ws://127.0.0.1:${(plain.address() as { port: number }).port}/`;
    await expect(connectWebSocket(url)).rejects.toThrow(/did not accept the subprotocol tap\.v1/);
  });

  it('rejects with a TypeError naming the form when the URL is not a WebSocket URL', async () => {
    await expect(connectWebSocket('http//nope')).rejects.toThrow(
      new TypeError('"http//nope" is not a WebSocket URL: give ws://host:port/path or wss://host:port/path'),
    );
    await expect(connectWebSocket('127.0.0.1:18787/tap')).rejects.toThrow(/^"127\.0\.0\.1:18787\/tap" is not a WebSocket URL/);
    await expect(connectWebSocket('http://127.0.0.1:1/tap')).rejects.toThrow(/\(ws:\/\/ for http:\/\/, wss:\/\/ for https:\/\/\)/);
  });

  it('sends the extra headers with the upgrade request', async () => {
    let token: string | string[] | undefined;
    const server = await cleanup.server({
      onSession: (t, request) => {
        token = request.headers['x-tap-token'];
        void t.start();
      },
    });
    const t = await connectWebSocket(server.url, { headers: { 'x-tap-token': 'secret' } });
    cleanup.add(() => t.close());
    expect(token).toBe('secret');
  });
});
