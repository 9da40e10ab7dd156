/**
 * Opening a connection to an agent reached by URL waits CONNECT_TIMEOUT_MS scaled by
 * --time-scale, as the harness's other waits do (spec: conformance#timing): on a loaded machine a
 * run with a larger scale gives a slow WebSocket handshake the time it gives everything else.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CaseContext } from '../context.ts';
import { CONNECT_TIMEOUT_MS, openConnection, type TargetSpec } from '../target.ts';
import { caseEnv } from './case-env.testkit.ts';

/** A server that takes TCP connections and never answers the WebSocket upgrade. */
let server: Server;
const sockets: Socket[] = [];
let target: TargetSpec;

beforeAll(async () => {
  server = createServer((s) => {
    sockets.push(s);
    s.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  target = { kind: 'websocket', url: `ws://127.0.0.1:${port}/tap`, display: `ws://127.0.0.1:${port}/tap` };
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => server.close(r));
});

describe('the wait for a connection to open (spec: conformance#timing)', () => {
  it('is the one given', async () => {
    const t0 = Date.now();
    await expect(openConnection(target, { connectTimeoutMs: 200 })).rejects.toThrow(/timed out/);
    expect(Date.now() - t0).toBeLessThan(CONNECT_TIMEOUT_MS / 2);
  });

  it("is CONNECT_TIMEOUT_MS scaled by the run's --time-scale in a case's connect", async () => {
    const env = caseEnv(target, 0.05);
    const ctx = new CaseContext(env, 'x.connect');
    const t0 = Date.now();
    const c = await ctx.connect();
    expect(c.ok).toBe(false);
    expect(c.ok ? '' : c.outcome.detail).toMatch(/^could not open a connection to the agent: .*timed out/);
    // 5000 ms × 0.05: a quarter of a second, not the five seconds of an unscaled wait.
    expect(Date.now() - t0).toBeLessThan(CONNECT_TIMEOUT_MS / 2);
  });
});
