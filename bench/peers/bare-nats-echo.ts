/**
 * The floor of the NATS round-trip rows: a bare NATS request/reply echo. Each request `{ id, payload }`
 * is parsed and answered `{ id, payload }` on its reply subject; nothing else. Prints "ready" once
 * the server has the subscription.
 */
import { parseArgs } from 'node:util';
import { connect } from '@nats-io/transport-node';

const { values } = parseArgs({ options: { server: { type: 'string' }, subject: { type: 'string', default: 'bench.echo' } } });
const nc = await connect({ servers: values.server! });
nc.subscribe(values.subject!, {
  callback: (err, m) => {
    if (err) return;
    const req = JSON.parse(m.string()) as { id: number; payload: unknown };
    m.respond(JSON.stringify({ id: req.id, payload: req.payload }));
  },
});
await nc.flush();
process.on('SIGTERM', () => void nc.close().finally(() => process.exit(0)));
process.stdout.write('ready\n');
