/**
 * A case whose budget ran out is disposed while its body still runs. What the body does after
 * that is never judged, and it must not open what nothing would close: an agent process, a
 * connection, a state folder (spec: conformance#processes).
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { CaseContext } from '../context.ts';
import { caseEnv } from './case-env.testkit.ts';

/** A WebSocket server that completes each upgrade only after 300 ms, and notes every socket's close. */
let server: Server;
let wss: WebSocketServer;
const sockets: { ws: WebSocket; closed: Promise<void> }[] = [];
let url: string;

beforeAll(async () => {
  wss = new WebSocketServer({ noServer: true, maxPayload: 1 << 20, handleProtocols: () => 'tap.v1' });
  server = createServer();
  server.on('upgrade', (req, socket, head) => {
    socket.on('error', () => {});
    setTimeout(() => {
      wss.handleUpgrade(req, socket, head, (ws) => {
        ws.on('error', () => {});
        sockets.push({ ws, closed: new Promise((r) => ws.once('close', () => r())) });
      });
    }, 300);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  url = `ws://127.0.0.1:${port}/tap`;
});
afterAll(async () => {
  for (const s of sockets) s.ws.terminate();
  wss.close();
  await new Promise((r) => server.close(r));
});

describe('a case disposed while its body runs (spec: conformance#processes)', () => {
  it('opens no connection and makes no state folder afterwards', async () => {
    const ctx = new CaseContext(
      caseEnv({ kind: 'stdio', command: process.execPath, args: ['-e', 'process.stdin.resume()'], display: 'node' }),
      'x.ended',
    );
    await ctx.dispose();
    await expect(ctx.connect()).rejects.toThrow(/the case has ended/);
    expect(() => ctx.stateDir()).toThrow(/the case has ended/);
  });

  it('closes a connection that opened only after the case was disposed', async () => {
    const ctx = new CaseContext(caseEnv({ kind: 'websocket', url, display: url }), 'x.late');
    const late = ctx.connect();
    late.catch(() => {});
    // The upgrade is still waiting on the server when the case ends.
    await new Promise((r) => setTimeout(r, 100));
    expect(sockets).toHaveLength(0);
    await ctx.dispose();
    await expect(late).rejects.toThrow(/the case has ended/);
    expect(sockets).toHaveLength(1);
    await sockets[0]!.closed;
  });
});
