/**
 * The harness's reads of a task's stream in TAP_EVENTS (conformance/cases/nats-durable/durable-view.ts):
 * what the stream held when a read began is read however slowly the server delivers it, and only
 * then does the read's wait for more begin. A read cut short by a loaded machine once judged the
 * README's agent by an empty stream: "the task's stream got messages after the other delivery's
 * task.result", observed [].
 */
import { createServer, connect as connectTcp, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { DEFAULT_NAMES as S, ensureStreams, eventSubject } from '../../reference/jetstream/streams.ts';
import { startNatsServer, type NatsServer } from '../../reference/transports/nats/nats-server.testkit.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';
import type { CaseContext } from '../context.ts';
import { DurableView } from '../cases/nats-durable/durable-view.ts';

describe.skipIf(lacks('nats-server'))(needing('nats-server', "the harness's reads of a task's stream"), () => {
  let server: NatsServer;
  let nc: NatsConnection;
  let view: DurableView;

  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
    await ensureStreams(nc);
    const ctx = {
      env: { target: { kind: 'nats', url: `${server.url}/tap.view-test` }, shared: new Map() },
      scaled: (ms: number) => ms,
    } as unknown as CaseContext;
    view = await DurableView.open(ctx);
  });
  afterAll(async () => {
    await view?.nc.close();
    await nc?.close();
    await server?.stop();
  });

  /** A TCP relay to the server that holds back every chunk the server sends for `ms`: a loaded machine, seen from the harness. */
  async function slowRelay(ms: number): Promise<{ port: number; close: () => Promise<void> }> {
    const sockets = new Set<Socket>();
    const relay: Server = createServer((client) => {
      const upstream = connectTcp(server.port, '127.0.0.1');
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('error', () => s.destroy());
      }
      client.on('data', (chunk) => upstream.write(chunk));
      upstream.on('data', (chunk) => setTimeout(() => client.writable && client.write(chunk), ms));
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => setTimeout(() => client.destroy(), ms));
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
    const close = async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => relay.close(() => r()));
    };
    return { port: (relay.address() as { port: number }).port, close };
  }

  it('reads every message stored when the read began, however slowly they come, before its wait for more', async () => {
    const js = jetstream(nc);
    for (const sequence of [1, 2, 3])
      await js.publish(eventSubject(S, 'view-task'), JSON.stringify({ type: 'task.status', task_id: 'view-task', sequence }));
    const relay = await slowRelay(300);
    const slow = await connect({ servers: `nats://127.0.0.1:${relay.port}` });
    try {
      // A wait of 50 ms for more: the server's 300 ms of delay come on top, for what it already holds.
      const entries = await view.stream('view-task', () => false, 50, slow);
      expect(entries.map((e) => e.message.sequence)).toEqual([1, 2, 3]);
    } finally {
      await slow.close().catch(() => {});
      await relay.close();
    }
  });

  it('waits its time for messages not yet stored, and stops when done() holds', async () => {
    const js = jetstream(nc);
    setTimeout(() => void js.publish(eventSubject(S, 'later-task'), JSON.stringify({ task_id: 'later-task', sequence: 1 })), 200);
    const later = await view.stream('later-task', (e) => e.length >= 1, 10_000);
    expect(later.map((e) => e.message.sequence)).toEqual([1]);
    expect(await view.stream('empty-task', () => false, 50)).toEqual([]);
  });
});
