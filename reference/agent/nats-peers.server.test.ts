/**
 * The reference agent over NATS against peers that attack it through the binding: a keepalive
 * interval that would overflow its timers, frames held before the handshake, frames forged into
 * another requester's signed session, and one NATS user filling the session table
 * (spec: bindings-nats#liveness, limits#pre-handshake, bindings-nats#forged-frames, limits#sources).
 */
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AgentOptions } from './options.ts';
import { createAgent, type Agent } from './agent.ts';
import { withConformanceCapabilities } from './conformance-capabilities.ts';
import { agentCard, REQUESTER_ID, TEST_KEY, TEST_KEY_BYTES, TestPeer, type Msg } from './peer.testkit.ts';
import { connectNatsTransport } from '../transports/nats/connect.ts';
import { NatsTransport } from '../transports/nats/nats-transport.ts';
import { Header, newConnectionId, openSubject, subjectsOf } from '../transports/nats/subjects.ts';
import { NO_NATS_SERVER, natsServerInstalled, startNatsServer, type NatsServer } from '../transports/nats/nats-server.testkit.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

const AGENT = 'test.agent';
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
});

function serveOn(url: string, options: Partial<AgentOptions> = {}, trustRequestInfo = false): Promise<Agent> {
  const agent = createAgent({ card: agentCard(), capabilities: withConformanceCapabilities(), logger: () => {}, env: false, ...options });
  cleanups.push(() => agent.shutdown());
  return agent.listenNats({ url, trustRequestInfo }).then(() => agent);
}

async function natsClient(url: string): Promise<NatsConnection> {
  const nc = await connect({ servers: url });
  cleanups.push(() => nc.close());
  return nc;
}

/** The Tap-Open verdict and body of an open request with the given Tap-Keepalive-Ms (none when undefined). */
async function openWith(nc: NatsConnection, keepalive: string | undefined): Promise<string> {
  const h = natsHeaders();
  h.set(Header.CONNECTION, newConnectionId());
  if (keepalive !== undefined) h.set(Header.KEEPALIVE_MS, keepalive);
  const reply = await nc.request(openSubject('tap', AGENT), new Uint8Array(0), { headers: h, timeout: 5000 });
  const verdict = reply.headers?.get(Header.OPEN) ?? '';
  return verdict === 'ok' ? 'ok' : `${verdict} ${reply.string()}`;
}

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'the agent over NATS against hostile peers'), () => {
  let server: NatsServer;
  beforeAll(async () => {
    server = await startNatsServer({ jetstream: false });
  });
  afterAll(async () => {
    await server?.stop();
  });

  describe('Tap-Keepalive-Ms (spec: bindings-nats#liveness)', () => {
    it('refuses an open request announcing 1e13 ms, or any value outside 100–60 000 ms, with 1008; takes the bounds and a missing header', async () => {
      await serveOn(server.url);
      const nc = await natsClient(server.url);
      for (const bad of ['1e13', '10000000000000', '0', '99', '60001', '-1', '1.5', 'soon']) {
        const verdict = await openWith(nc, bad);
        expect(verdict).toMatch(/^1008 Tap-Keepalive-Ms ".*" is not a whole number of milliseconds from 100 to 60000$/);
      }
      for (const good of ['100', '60000', undefined]) expect(await openWith(nc, good)).toBe('ok');
    });

    it('runs no timer shorter than the range allows, whatever the peer announced: no TimeoutOverflowWarning', async () => {
      const warnings: string[] = [];
      const onWarning = (w: Error) => warnings.push(w.name);
      process.on('warning', onWarning);
      const nc = await natsClient(server.url);
      const t = new NatsTransport({ nc, publishTo: 'x.out', subscribeTo: 'x.in', maxFrameBytes: 1024, peerKeepaliveMs: 1e13 });
      await t.start();
      await new Promise((r) => setTimeout(r, 300));
      t.terminate();
      process.off('warning', onWarning);
      expect(warnings).not.toContain('TimeoutOverflowWarning');
    });

    it('does not connect to an agent that announces 1e13 ms, and says why', async () => {
      const nc = await natsClient(server.url);
      nc.subscribe(openSubject('tap', 'test.liar'), {
        callback: (_err, msg) => {
          const h = natsHeaders();
          h.set(Header.OPEN, 'ok');
          h.set(Header.KEEPALIVE_MS, '1e13');
          msg.respond(new Uint8Array(0), { headers: h });
        },
      });
      await nc.flush();
      await expect(connectNatsTransport(`${server.url}/test.liar`)).rejects.toThrow(
        /agent test\.liar announced Tap-Keepalive-Ms "1e13", not a whole number of milliseconds from 100 to 60000/,
      );
    });
  });

  describe('before the handshake (spec: limits#pre-handshake)', () => {
    it('holds at most the 64 KiB limit of a frame a connection has begun, not the megabyte message that carried it', async () => {
      setFlagsFromString('--expose-gc');
      const gc = runInNewContext('gc') as () => void;
      await serveOn(server.url);
      const nc = await natsClient(server.url);
      const piece = new Uint8Array(nc.info!.max_payload - 1024).fill(0x20);
      const held = (): number => {
        gc();
        gc();
        return process.memoryUsage().arrayBuffers;
      };
      const before = held();
      const count = 24;
      for (let i = 0; i < count; i++) {
        const id = newConnectionId();
        const h = natsHeaders();
        h.set(Header.CONNECTION, id);
        h.set(Header.KEEPALIVE_MS, '60000');
        const reply = await nc.request(openSubject('tap', AGENT), new Uint8Array(0), { headers: h, timeout: 5000 });
        expect(reply.headers?.get(Header.OPEN)).toBe('ok');
        // The first piece of a frame that never ends, sent before any handshake.init.
        const p = natsHeaders();
        p.set(Header.SEQ, '1');
        p.set(Header.MORE, '1');
        nc.publish(subjectsOf('tap', AGENT, id).toAgent, piece, { headers: p });
      }
      await nc.flush();
      await new Promise((r) => setTimeout(r, 300));
      const perConnection = (held() - before) / count;
      // Before the bound, each connection pinned the whole ~1 MiB message (about 2 MiB in all).
      expect(perConnection).toBeLessThan(96 * 1024);
    });
  });

  describe('a frame forged into a signed session (spec: bindings-nats#forged-frames)', () => {
    const KEY = { keyId: 'k1', key: TEST_KEY_BYTES };

    async function signedSession(): Promise<{ peer: TestPeer; transport: NatsTransport }> {
      await serveOn(server.url, { keys: [{ key_id: 'k1', key: TEST_KEY, peer: REQUESTER_ID }] });
      const transport = await connectNatsTransport(`${server.url}/${AGENT}`);
      cleanups.push(() => transport.close());
      const peer = new TestPeer(transport);
      peer.key = KEY;
      await peer.handshake({ params: { integrity: { alg: 'hmac-sha256', key_id: 'k1' } } });
      return { peer, transport };
    }

    it('refuses a forged task.request carrying the next Tap-Seq with INVALID_SIGNATURE, and the session goes on over the same connection', async () => {
      const { peer, transport } = await signedSession();
      const forged = {
        ...peer.build({ type: 'task.request', task_id: 'evil', payload: { capability: 'tap.test.echo', input: 'forged' } }),
      };
      delete forged.signature;
      transport.forge(new TextEncoder().encode(JSON.stringify(forged)));
      expect((await peer.reply(forged.message_id)).payload.code).toBe('INVALID_SIGNATURE');
      // The requester's own next message carries the number the forged frame had.
      peer.request('mine', 'tap.test.echo', 'genuine');
      expect((await peer.result('mine')).payload.output).toBe('genuine');
      expect(peer.closed).toBe(false);
      expect(peer.received.some((m) => m.task_id === 'evil' && m.type !== 'error')).toBe(false);
    });

    it('is not cut by a third NATS client that forges frames with every plausible Tap-Seq, signed with a wrong key', async () => {
      const { peer, transport } = await signedSession();
      const intruder = await natsClient(server.url);
      const inbound = subjectsOf('tap', AGENT, transport.connectionId!).toAgent;
      const own = peer.key;
      peer.key = { keyId: 'k1', key: new TextEncoder().encode('another key of thirty-two bytes!') };
      const forged = Array.from({ length: 12 }, () => JSON.stringify(peer.build({ type: 'ping' })));
      peer.key = own;
      forged.forEach((text, i) => {
        const h = natsHeaders();
        h.set(Header.SEQ, String(i + 1));
        intruder.publish(inbound, text, { headers: h });
      });
      await intruder.flush();
      for (let i = 0; i < 3; i++) {
        peer.request(`after${i}`, 'tap.test.echo', i);
        expect((await peer.result(`after${i}`)).payload.output).toBe(i);
      }
      expect(peer.received.filter((m) => m.type === 'error' && m.payload.code === 'INVALID_SIGNATURE')).toHaveLength(12);
      expect(peer.closed).toBe(false);
    });
  });

  describe('one requester that opens and abandons sessions (spec: limits#sources)', () => {
    it('locks nobody out: with a table of 32, each of its 120 sessions gets in, and so does the next requester', async () => {
      await serveOn(server.url, { maxSessions: 32 });
      const nc = await natsClient(server.url);
      let refused = 0;
      for (let i = 0; i < 120; i++) {
        const transport = await connectNatsTransport(`${server.url}/${AGENT}`, { nc });
        const peer = new TestPeer(transport);
        const init = peer.init();
        const ack = await peer.reply(init.message_id);
        if (ack.type !== 'handshake.ack') refused++;
        else {
          const ready = peer.send({ type: 'handshake.ready', session_id: ack.payload.session_id, payload: { params: ack.payload.params } });
          await peer.reply(ready.message_id);
        }
        // Gone without a farewell: the session is orphaned, resumable for the resume window.
        await transport.close({ code: 1000, reason: 'abandoned' });
      }
      expect(refused).toBe(0);
      const victim = await connectNatsTransport(`${server.url}/${AGENT}`, { nc });
      cleanups.push(() => victim.close());
      expect((await new TestPeer(victim).handshake()).type).toBe('handshake.ack');
    });
  });

  describe('a NATS user that fills its share (spec: limits#sources)', () => {
    let accounts: NatsServer;
    const users = (name: string) => `nats://${name}:${name}-pw@127.0.0.1:${accounts.port}`;
    beforeAll(async () => {
      // Requesters reach the agent's account through imports; the open service shares their client information.
      accounts = await startNatsServer({
        jetstream: false,
        config: `accounts {
  AGENTS {
    users: [{ user: agent, password: agent-pw }]
    exports: [{ service: "tap.open.>" }, { service: "tap.in.>" }, { stream: "tap.out.>" }]
  }
  REQUESTERS {
    users: [{ user: alice, password: alice-pw }, { user: bob, password: bob-pw }]
    imports: [
      { service: { account: AGENTS, subject: "tap.open.>" }, share: true }
      { service: { account: AGENTS, subject: "tap.in.>" } }
      { stream: { account: AGENTS, subject: "tap.out.>" } }
    ]
  }
}`,
      });
    });
    afterAll(async () => {
      await accounts?.stop();
    });

    /** The reply to a handshake.init of `user`; with `complete`, the handshake goes on to go, so that the session is held. */
    async function opening(user: string, complete = false): Promise<Msg> {
      const transport = await connectNatsTransport(`${users(user)}/${AGENT}`);
      cleanups.push(() => transport.close());
      const peer = new TestPeer(transport);
      if (complete) return peer.handshake();
      const init = peer.init();
      return peer.reply(init.message_id);
    }

    it('gives each NATS user the server names its own share of sessions: alice over hers is refused BUSY, bob still gets in', async () => {
      await serveOn(users('agent'), { maxSessionsPerSource: 2 }, true);
      expect((await opening('alice', true)).type).toBe('handshake.ack');
      expect((await opening('alice', true)).type).toBe('handshake.ack');
      const refused = await opening('alice');
      expect(refused.payload).toMatchObject({ code: 'BUSY', details: { scope: 'source', limit: 2 } });
      expect(refused.payload.message).toContain('anonymous requesters from nats:REQUESTERS/alice');
      expect((await opening('bob')).type).toBe('handshake.ack');
    });

    it('without trustRequestInfo every anonymous NATS requester shares one origin', async () => {
      await serveOn(users('agent'), { maxSessionsPerSource: 2 });
      expect((await opening('alice', true)).type).toBe('handshake.ack');
      expect((await opening('alice', true)).type).toBe('handshake.ack');
      expect((await opening('bob')).payload).toMatchObject({ code: 'BUSY', details: { scope: 'source' } });
    });
  });
});
