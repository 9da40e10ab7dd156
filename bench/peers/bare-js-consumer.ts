/**
 * One consumer of the durable row's floor: pulls the records of a work-queue stream through an
 * existing durable consumer, parses each and acknowledges it; nothing else. Prints "ready" once it
 * consumes.
 */
import { parseArgs } from 'node:util';
import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';

const { values } = parseArgs({
  options: { server: { type: 'string' }, stream: { type: 'string' }, consumer: { type: 'string' }, batch: { type: 'string' } },
});
const nc = await connect({ servers: values.server! });
const consumer = await jetstream(nc).consumers.get(values.stream!, values.consumer!);
const messages = await consumer.consume({ max_messages: Number(values.batch ?? 8) });
process.on('SIGTERM', () => void nc.close().finally(() => process.exit(0)));
process.stdout.write('ready\n');
for await (const m of messages) {
  JSON.parse(m.string());
  m.ack();
}
