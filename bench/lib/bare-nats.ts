/**
 * The bare protocol over NATS (bench/peers/bare-nats-protocol.ts in a child): the requester side of
 * the NATS round-trip rows' ceilings. Each message goes with a numbered Tap-Seq header, as the
 * binding's do, and every answer is read on one inbox and parsed; with bareFour or bareQuiet from
 * systems.ts it sends TAP's messages of a task.
 */
import { connect, createInbox, headers } from '@nats-io/transport-node';
import type { NatsServer } from '../../reference/transports/nats/nats-server.testkit.ts';
import { Header } from '../../reference/transports/nats/subjects.ts';
import { spawnScript, started, within } from './children.ts';
import { peer } from './paths.ts';
import { BareRequester, bareSystem, type System } from './systems.ts';

/** How many bare peers this process started: each listens on a subject of its own (one peer keeps one set of templates). */
let made = 0;

/** The bare peer on `server` and a requester here; the caller shapes its calls (bareFour, bareQuiet). */
export async function bareNats(server: NatsServer): Promise<System & { requester: BareRequester }> {
  const subject = `bench.bare.${++made}`;
  const child = spawnScript(peer('bare-nats-protocol.ts'), ['--server', server.url, '--subject', subject]);
  try {
    await started([child], 'the bare NATS peer');
  } catch (err) {
    await child.stop(2000);
    throw err;
  }
  const nc = await connect({ servers: server.url });
  const inbox = createInbox();
  let sent = 0;
  const requester = new BareRequester((text) => {
    const h = headers();
    h.set(Header.SEQ, String(++sent));
    nc.publish(subject, text, { headers: h, reply: inbox });
  });
  nc.subscribe(inbox, {
    callback: (err, m) => {
      if (err || !(Number(m.headers?.get(Header.SEQ)) > 0)) return;
      requester.receive(m.string());
    },
  });
  await nc.flush();
  const close = async () => {
    await nc.close().catch(() => {});
    await child.stop(2000);
  };
  try {
    await within(requester.call(0), 30_000, 'the bare NATS peer answering');
  } catch (err) {
    await close();
    throw err;
  }
  return bareSystem(requester, child.child.pid, close);
}
