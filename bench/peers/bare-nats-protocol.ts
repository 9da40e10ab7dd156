/**
 * The ceilings of the NATS round-trip rows: the bare protocol of bare-protocol.ts over NATS, every
 * message published with a numbered Tap-Seq header as the binding's are (spec: bindings-nats#frames).
 * A message on --subject is answered on its reply subject: once a `templates` line has set them,
 * with TAP's three answers of a task (the four-message ceiling) or the quiet task's one result (the
 * quiet ceiling). Prints "ready" once the server has the subscription.
 */
import { parseArgs } from 'node:util';
import { connect, headers } from '@nats-io/transport-node';
import { Header } from '../../dist/reference/transports/nats/index.js';
import { answer } from './bare-protocol.ts';

const { values } = parseArgs({ options: { server: { type: 'string' }, subject: { type: 'string', default: 'bench.bare' } } });
const nc = await connect({ servers: values.server! });
let sent = 0;
nc.subscribe(values.subject!, {
  callback: (err, m) => {
    if (err || !m.reply) return;
    const to = m.reply;
    // Numbered, as the binding's every frame is: one without a number is not read.
    if (!(Number(m.headers?.get(Header.SEQ)) > 0)) return;
    void answer(m.string(), (text) => {
      const h = headers();
      h.set(Header.SEQ, String(++sent));
      nc.publish(to, text, { headers: h });
    });
  },
});
await nc.flush();
process.on('SIGTERM', () => void nc.close().finally(() => process.exit(0)));
process.stdout.write('ready\n');
