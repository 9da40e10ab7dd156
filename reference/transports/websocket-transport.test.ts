import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { CloseInfo, InboundFrame } from './transport.ts';
import type { WebSocketTransport } from './websocket.ts';
import { Cleanup, sleep, text, waitFor } from './transport.testkit.ts';

const cleanup = new Cleanup();
afterEach(() => cleanup.run());

/** A server that records what its sessions receive and how they close, and one client. */
async function pair(options: { maxPayload?: number; maxFrameBytes?: number; start?: boolean } = {}) {
  const frames: InboundFrame[] = [];
  const serverSessions: WebSocketTransport[] = [];
  let resolveClose!: (info: CloseInfo) => void;
  const serverClosed = new Promise<CloseInfo>((resolve) => (resolveClose = resolve));
  const server = await cleanup.server({
    maxPayload: options.maxPayload,
    onSession: (t) => {
      serverSessions.push(t);
      if (options.maxFrameBytes !== undefined) t.setMaxFrameBytes(options.maxFrameBytes);
      t.onmessage = (f) => frames.push(f);
      t.onclose = resolveClose;
      if (options.start !== false) void t.start();
    },
  });
  const client = await cleanup.client(server.url);
  const clientClosed = waitFor<CloseInfo>((done) => (client.onclose = done));
  await client.start();
  return { server, client, frames, serverSessions, serverClosed, clientClosed };
}

describe('WebSocketTransport', () => {
  it('flags a binary frame instead of decoding it (spec: bindings#websocket)', async () => {
    const { client, frames } = await pair();
    await client.sendRaw(new Uint8Array([1, 2, 3]), { binary: true });
    await expect.poll(() => frames.length).toBe(1);
    expect(frames[0].binary).toBe(true);
    expect([...frames[0].bytes]).toEqual([1, 2, 3]);
  });

  it('delivers invalid UTF-8 in a text frame as bytes, without closing', async () => {
    const { client, frames } = await pair();
    let closed = false;
    client.onclose = () => (closed = true);
    await client.sendRaw(new Uint8Array([0x7b, 0xc3, 0x28, 0x7d]));
    await client.send('{}');
    await expect.poll(() => frames.length).toBe(2);
    expect(frames.map((f) => [...f.bytes])).toEqual([
      [0x7b, 0xc3, 0x28, 0x7d],
      [0x7b, 0x7d],
    ]);
    expect(frames[0].binary).toBeUndefined();
    expect(closed).toBe(false);
  });

  it('closes with 1009 when a frame exceeds maxPayload (spec: limits#max-message-bytes)', async () => {
    const { client, serverClosed, clientClosed } = await pair({ maxPayload: 1024 });
    await client.send('"' + 'x'.repeat(2000) + '"');
    expect((await clientClosed).code).toBe(1009);
    const info = await serverClosed;
    expect(info.code).toBe(1009);
    expect(info.error).toBeInstanceOf(Error);
  });

  it('accepts a frame of exactly maxPayload', async () => {
    const { client, frames } = await pair({ maxPayload: 1024 });
    await client.send('"' + 'x'.repeat(1022) + '"');
    await expect.poll(() => frames.length).toBe(1);
    expect(frames[0]).toMatchObject({ oversized: false, byteLength: 1024 });
  });

  it('delivers a frame over the negotiated limit as a flagged prefix and stays open', async () => {
    const { client, frames } = await pair({ maxFrameBytes: 10 });
    await client.send('"0123456789abc"');
    await client.send('"ok"');
    await expect.poll(() => frames.length).toBe(2);
    expect(frames.map((f) => [text(f), f.oversized, f.byteLength])).toEqual([
      ['"0123456789', true, 15],
      ['"ok"', false, 4],
    ]);
  });

  it('passes the server close code and reason to the client (spec: bindings#websocket-close-codes)', async () => {
    const { client, serverSessions, clientClosed } = await pair();
    await expect.poll(() => serverSessions.length).toBe(1);
    await serverSessions[0].close({ code: 1008, reason: 'identity mismatch' });
    expect(await clientClosed).toEqual({ code: 1008, reason: 'identity mismatch' });
    expect(client.socket.readyState).toBe(client.socket.CLOSED);
  });

  it('passes the client close code to the server, and resolves close() once closed', async () => {
    const { client, serverClosed, clientClosed } = await pair();
    await client.close({ code: 1000, reason: 'farewell' });
    expect(client.socket.readyState).toBe(client.socket.CLOSED);
    expect(await clientClosed).toEqual({ code: 1000, reason: 'farewell' });
    expect(await serverClosed).toEqual({ code: 1000, reason: 'farewell' });
  });

  it('sends 1011 for a code a close frame cannot carry, and cuts a long reason to 123 bytes', async () => {
    const { client, serverClosed } = await pair();
    await client.close({ code: 1006, reason: 'é'.repeat(100) });
    const info = await serverClosed;
    expect(info.code).toBe(1011);
    expect(Buffer.byteLength(info.reason!)).toBeLessThanOrEqual(123);
    expect(info.reason).toBe('é'.repeat(61));
  });

  it('holds frames that arrive before start() and delivers them in order', async () => {
    const { client, serverSessions, frames } = await pair({ start: false });
    for (let i = 0; i < 3; i++) await client.send(`${i}`);
    await sleep(30);
    expect(frames).toEqual([]);
    await serverSessions[0].start();
    await client.send('3');
    await expect.poll(() => frames.length).toBe(4);
    expect(frames.map(text)).toEqual(['0', '1', '2', '3']);
  });

  it('closes promptly even if it was never started', async () => {
    const { client, serverSessions, serverClosed } = await pair({ start: false });
    await client.send('{}');
    await expect.poll(() => serverSessions.length).toBe(1);
    await serverSessions[0].close({ code: 1000 });
    expect((await serverClosed).code).toBe(1000);
  });

  it('drops sends once the socket is closed', async () => {
    const { client } = await pair();
    await client.close();
    await expect(client.send('{}')).resolves.toBeUndefined();
    await expect(client.close()).resolves.toBeUndefined();
  });
});
