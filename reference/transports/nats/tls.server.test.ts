import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeCertificates, type CertificateKit, type Issued } from '../../../test/certificates.testkit.ts';
import { lacks, needing } from '../../../test/system-tools.testkit.ts';
import { createAgent, withConformanceCapabilities, type Agent } from '../../agent/index.ts';
import { connectNats } from '../../client/index.ts';
import { connectNatsTransport } from './connect.ts';
import { startNatsServer, type NatsServer } from './nats-server.testkit.ts';

const AGENT = 'tap.tls-agent';

let kit: CertificateKit;
let server: NatsServer;
let plain: NatsServer;
let agentCert: Issued;
let requesterCert: Issued;
let intruder: Issued;

/** A server requiring TLS with client certificates, each mapped to a user whose permissions the binding's table gives (spec: bindings-nats#security). */
function tlsConfig(k: CertificateKit, server: Issued): string {
  return `
tls {
  cert_file: "${server.certFile}"
  key_file: "${server.keyFile}"
  ca_file: "${k.ca.certFile}"
  verify_and_map: true
  timeout: 5
}
authorization {
  users = [
    { user: "CN=${AGENT}", permissions: {
        publish: { allow: ["tap.out.*.${AGENT}"] }
        subscribe: { allow: ["tap.open.${AGENT}", "tap.in.*.${AGENT}"] }
        allow_responses: true } }
    { user: "CN=requester", permissions: {
        publish: { allow: ["tap.open.${AGENT}", "tap.in.*.${AGENT}"] }
        subscribe: { allow: ["tap.out.*.${AGENT}", "_INBOX.>"] } } }
  ]
}`;
}

const tlsUrl = (s: NatsServer, agentId?: string): string => `${s.url.replace(/^nats:/, 'tls:')}${agentId ? `/${agentId}` : ''}`;

describe.skipIf(lacks('nats-server') || lacks('openssl'))(
  needing('nats-server', needing('openssl', 'the NATS binding over tls:// with client certificates and per-user permissions')),
  () => {
    beforeAll(async () => {
      kit = makeCertificates();
      agentCert = kit.ca.client(AGENT);
      requesterCert = kit.ca.client('requester');
      intruder = kit.otherCa.client('requester');
      server = await startNatsServer({ jetstream: false, config: tlsConfig(kit, kit.ca.server()) });
      plain = await startNatsServer({ jetstream: false });
    });
    afterAll(async () => {
      await Promise.all([server?.stop(), plain?.stop()]);
      kit?.remove();
    });

    const tls = (who: Issued) => ({ ca: kit.ca.cert, cert: who.cert, key: who.key });

    async function serve(): Promise<Agent> {
      const agent = createAgent({
        card: {
          agent_id: AGENT,
          name: 'TLS agent',
          description: 'Serves the conformance capabilities over NATS with TLS.',
          capabilities: [],
          limits: { max_concurrent_tasks: 8, max_task_seconds: 60, max_message_bytes: 1048576 },
        },
        capabilities: withConformanceCapabilities(),
        logger: () => {},
        env: false,
      });
      await agent.listenNats({ url: tlsUrl(server), tls: tls(agentCert) });
      return agent;
    }

    it('completes a task between an agent and a requester, each connecting with its own client certificate', async () => {
      const agent = await serve();
      try {
        const client = await connectNats(tlsUrl(server, AGENT), {
          agentId: 'test.requester',
          reconnect: false,
          nats: { tls: tls(requesterCert) },
        });
        expect(await client.submit('tap.test.echo', { over: 'tls' }).result).toEqual({ status: 'completed', output: { over: 'tls' } });
        await client.close();
      } finally {
        await agent.shutdown();
      }
    });

    it('is refused by the server without a client certificate, with one of another authority, or without trusting its authority', async () => {
      const agent = await serve();
      try {
        const open = (o: Parameters<typeof connectNatsTransport>[1]) =>
          connectNatsTransport(tlsUrl(server, AGENT), { ...o, connectOptions: { timeout: 2000 }, timeoutMs: 2000 });
        await expect(open({ tls: { ca: kit.ca.cert } })).rejects.toThrow(/could not connect/);
        await expect(open({ tls: tls(intruder) })).rejects.toThrow(/could not connect/);
        await expect(open({ tls: { cert: requesterCert.cert, key: requesterCert.key } })).rejects.toThrow(/could not connect.*certificate/);
        // The same certificate that works with the authority trusted.
        const t = await open({ tls: tls(requesterCert) });
        await t.close();
      } finally {
        await agent.shutdown();
      }
    });

    it("gives each certificate its user's permissions: the requester cannot take the agent's subjects", async () => {
      const nc = await connect({ servers: server.url, tls: tls(requesterCert) });
      try {
        const sub = nc.subscribe(`tap.open.${AGENT}`);
        expect(await sub.closed).toMatchObject({ name: 'PermissionViolationError', subject: `tap.open.${AGENT}` });
      } finally {
        await nc.close();
      }
    });

    it('refuses a tls:// URL whose server offers no TLS, rather than talk in the clear (spec: bindings-nats#addressing)', async () => {
      await expect(connectNatsTransport(`${tlsUrl(plain)}/${AGENT}`, { timeoutMs: 2000 })).rejects.toThrow(/does not support 'tls'/);
    });
  },
);
