import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lacks, needing } from '../../test/system-tools.testkit.ts';
import { makeCertificates, type CertificateKit, type Issued } from '../../test/certificates.testkit.ts';
import { connectWs, type TapClient } from '../client/index.ts';
import { connectWebSocket } from '../transports/websocket.ts';
import type { AgentListener } from './agent.ts';
import { testAgent } from './peer.testkit.ts';

let kit: CertificateKit;
let alice: Issued;
let alice2: Issued;
let bob: Issued;
let intruder: Issued;

describe.skipIf(lacks('openssl'))(
  needing('openssl', 'wss:// served by the agent, with mutual TLS (spec: security#client-certificates)'),
  () => {
    beforeAll(() => {
      kit = makeCertificates();
      alice = kit.ca.client('alice', { san: 'URI:spiffe://tap.test/alice' });
      // A second certificate of the same identity: the principal is the identity, not the key.
      alice2 = kit.ca.client('alice-again', { subject: '/CN=someone-else', san: 'URI:spiffe://tap.test/alice' });
      bob = kit.ca.client('bob');
      intruder = kit.otherCa.client('alice', { san: 'URI:spiffe://tap.test/alice' });
    });
    afterAll(() => kit?.remove());

    async function listening(mutual: boolean): Promise<{ listener: AgentListener; stop: () => Promise<void> }> {
      const agent = testAgent();
      const server = kit.ca.server();
      const listener = await agent.listen({
        path: '/tap',
        tls: { cert: server.cert, key: server.key, ...(mutual ? { ca: kit.ca.cert } : {}) },
      });
      return { listener, stop: () => agent.shutdown() };
    }

    const client = (url: string, who?: Issued): Promise<TapClient> =>
      connectWs(url, {
        agentId: 'tls-requester',
        reconnect: false,
        ws: { tls: { ca: kit.ca.cert, ...(who ? { cert: who.cert, key: who.key } : {}) } },
      });

    it('serves wss:// with its certificate: a requester that trusts the authority completes a task', async () => {
      const { listener, stop } = await listening(false);
      try {
        expect(listener.url).toMatch(/^wss:\/\/127\.0\.0\.1:\d+\/tap$/);
        const c = await client(listener.url);
        expect(await c.submit('tap.test.echo', { over: 'tls' }).result).toEqual({ status: 'completed', output: { over: 'tls' } });
        await c.close();
        // A requester that does not trust the authority does not connect.
        await expect(connectWebSocket(listener.url)).rejects.toThrow(/TLS failed/);
      } finally {
        await stop();
      }
    });

    it('with a ca, completes tasks for a client certificate it signed, and the certificate is the principal', async () => {
      const { listener, stop } = await listening(true);
      try {
        const a = await client(listener.url, alice);
        const h = a.submit('tap.test.sleep', { ms: 30_000 });
        const { taskId } = await h.accepted;
        expect(await a.submit('tap.test.echo', 'mutual').result).toEqual({ status: 'completed', output: 'mutual' });
        // The same identity on another connection, by another certificate: the same principal sees the task.
        const same = await client(listener.url, alice2);
        expect((await same.status(taskId)).state).toBe('running');
        // Another identity sees nothing of it (spec: authorization#task-visibility).
        const b = await client(listener.url, bob);
        await expect(b.status(taskId)).rejects.toMatchObject({ code: 'UNKNOWN_TASK' });
        await a.cancel(taskId);
        await Promise.all([a.close(), same.close(), b.close()]);
      } finally {
        await stop();
      }
    });

    it('refuses a connection without a client certificate (401) and one of another authority (403), before any session', async () => {
      const { listener, stop } = await listening(true);
      try {
        await expect(connectWebSocket(listener.url, { tls: { ca: kit.ca.cert } })).rejects.toThrow(
          /HTTP 401 .*requires a client certificate/,
        );
        await expect(connectWebSocket(listener.url, { tls: { ca: kit.ca.cert, cert: intruder.cert, key: intruder.key } })).rejects.toThrow(
          /HTTP 403 .*client certificate was refused/,
        );
      } finally {
        await stop();
      }
    });
  },
);
