import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import {
  NO_NATS_SERVER,
  natsServerInstalled,
  startNatsCluster,
  startNatsServer,
  type NatsCluster,
  type NatsServer,
} from './nats-server.testkit.ts';
import { lacks, needing } from '../../../test/system-tools.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'the nats-server the tests start'), () => {
  let server: NatsServer;
  let nc: NatsConnection;
  beforeAll(async () => {
    server = await startNatsServer({ maxPayload: 4 * 1024 * 1024 });
    nc = await connect({ servers: server.url });
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  it('listens on loopback with JetStream enabled and the configured max_payload', async () => {
    expect(server.url).toMatch(/^nats:\/\/127\.0\.0\.1:\d+$/);
    expect(nc.info?.max_payload).toBe(4 * 1024 * 1024);
    const jsm = await jetstreamManager(nc);
    const info = await jsm.getAccountInfo();
    expect(info.streams).toBe(0);
  });

  it('stops: a client sees its connection close', async () => {
    const other = await startNatsServer();
    const client = await connect({ servers: other.url, reconnect: false });
    const closed = client.closed();
    await other.stop();
    await closed;
    expect(client.isClosed()).toBe(true);
  });
});

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'a three-node cluster the tests start'), () => {
  let cluster: NatsCluster;
  beforeAll(async () => {
    cluster = await startNatsCluster(3);
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('routes a message published on one node to a subscriber on another', async () => {
    const a = await connect({ servers: cluster.servers[0]!.url });
    const b = await connect({ servers: cluster.servers[2]!.url });
    try {
      const got = new Promise<string>((resolve) => b.subscribe('tap.cluster.check', { callback: (_e, m) => resolve(m.string()) }));
      await b.flush();
      // Interest crosses the routes asynchronously: publish until the subscriber on the other node sees one.
      let seen: string | undefined;
      void got.then((v) => (seen = v));
      for (let i = 0; i < 100 && seen === undefined; i++) {
        a.publish('tap.cluster.check', 'across');
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(await got).toBe('across');
    } finally {
      await a.close();
      await b.close();
    }
  });
});
