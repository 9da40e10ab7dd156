import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CloseInfo, InboundFrame } from '../transport.ts';
import { connectNatsTransport } from './connect.ts';
import { createNatsListener, type TapNatsListener } from './listener.ts';
import type { NatsTransport } from './nats-transport.ts';
import { NO_NATS_SERVER, natsServerInstalled, startNatsServer, type NatsServer } from './nats-server.testkit.ts';
import { lacks, needing } from '../../../test/system-tools.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

const decoder = new TextDecoder();
const text = (f: InboundFrame): string => decoder.decode(f.bytes);

/** Collects a transport's frames and its close. */
function watch(t: NatsTransport) {
  const frames: InboundFrame[] = [];
  let closed: CloseInfo | undefined;
  const waiters: Array<() => void> = [];
  const poke = () => {
    for (const w of waiters.splice(0)) w();
  };
  t.onmessage = (f) => {
    frames.push(f);
    poke();
  };
  t.onclose = (info) => {
    closed = info;
    poke();
  };
  const until = async (pred: () => boolean, ms = 5000): Promise<void> => {
    const deadline = Date.now() + ms;
    while (!pred()) {
      if (Date.now() > deadline) throw new Error('timed out waiting');
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 50);
      });
    }
  };
  return { frames, closed: () => closed, until };
}

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'the NATS transport (spec: bindings-nats)'), () => {
  let server: NatsServer;
  let listener: TapNatsListener;
  const accepted: NatsTransport[] = [];
  const agentId = 'tap.transport-test';

  beforeAll(async () => {
    // A small max_payload, so that frames must be cut into pieces (spec: bindings-nats#message-size).
    server = await startNatsServer({ maxPayload: 64 * 1024 });
    listener = await createNatsListener({
      url: server.url,
      agentId,
      maxFrameBytes: 300_000,
      ceilingBytes: 600_000,
      keepaliveMs: 100,
      onSession: (t) => accepted.push(t),
    });
  });
  afterAll(async () => {
    await listener?.close();
    await server?.stop();
  });

  const open = async () => {
    const before = accepted.length;
    const requester = await connectNatsTransport(`${server.url}/${agentId}`, { keepaliveMs: 100, maxFrameBytes: 300_000 });
    for (let i = 0; i < 100 && accepted.length === before; i++) await new Promise((r) => setTimeout(r, 10));
    const agent = accepted[accepted.length - 1]!;
    const a = watch(agent);
    const r = watch(requester);
    await agent.start();
    await requester.start();
    return { agent, requester, a, r };
  };

  it('carries frames both ways in order, pieces of frames larger than max_payload joined again (bindings-nats#frames)', async () => {
    const { agent, requester, a, r } = await open();
    const big = 'x'.repeat(200_000);
    for (let i = 0; i < 50; i++) await requester.send(`{"n":${i}}`);
    await requester.send(big);
    await agent.send('{"from":"agent"}');
    await a.until(() => a.frames.length === 51);
    expect(a.frames.slice(0, 50).map(text)).toEqual(Array.from({ length: 50 }, (_, i) => `{"n":${i}}`));
    expect(a.frames[50]!.byteLength).toBe(200_000);
    expect(a.frames[50]!.oversized).toBe(false);
    expect(text(a.frames[50]!)).toBe(big);
    await r.until(() => r.frames.length === 1);
    expect(text(r.frames[0]!)).toBe('{"from":"agent"}');
    await requester.close();
  });

  it('hands a frame above the negotiated limit up as an oversized prefix, and closes with 1009 above the ceiling (limits#bounded-reading)', async () => {
    const { agent, requester, a, r } = await open();
    agent.setMaxFrameBytes(1000);
    await requester.send('y'.repeat(5000));
    await a.until(() => a.frames.length === 1);
    expect(a.frames[0]).toMatchObject({ oversized: true, byteLength: 5000 });
    expect(a.frames[0]!.bytes.byteLength).toBe(1001);
    await requester.send('z'.repeat(700_000));
    await a.until(() => a.closed() !== undefined);
    expect(a.closed()!.code).toBe(1009);
    await r.until(() => r.closed() !== undefined);
    expect(r.closed()!.code).toBe(1009);
  });

  it('tells the peer the close code and reason (bindings-nats#closing)', async () => {
    const { agent, r } = await open();
    await agent.close({ code: 1008, reason: 'fatal error' });
    await r.until(() => r.closed() !== undefined);
    expect(r.closed()).toEqual({ code: 1008, reason: 'fatal error' });
  });

  it('counts a silent peer as lost with 1006 after three missed keepalives (bindings-nats#liveness)', async () => {
    const { requester, a } = await open();
    requester.terminate();
    await a.until(() => a.closed() !== undefined, 3000);
    expect(a.closed()!.code).toBe(1006);
    expect(a.closed()!.reason).toMatch(/sent nothing for 300 ms/);
  });

  it('ends a close that a loss overtakes: close() resolves although its flush never will (the cause of a hung certification run)', async () => {
    const { requester, r } = await open();
    const closing = requester.close();
    // The loss closes the connection the requester owns while close() waits for the server's reply to its flush.
    requester.terminate();
    const outcome = await Promise.race([closing.then(() => 'closed'), new Promise((res) => setTimeout(() => res('hung'), 1500))]);
    expect(outcome).toBe('closed');
    expect(r.closed()).toMatchObject({ code: 1006, reason: 'terminated' });
  });

  it('says plainly when no agent listens under the id', async () => {
    await expect(connectNatsTransport(`${server.url}/tap.nobody`)).rejects.toThrow(/no agent tap\.nobody listens there/);
  });
});
