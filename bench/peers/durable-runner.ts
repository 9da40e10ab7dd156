/**
 * One agent of the durable row: the reference's durable runner on the capability queue, with a
 * handler that returns its input at once (the cost measured is the binding's, not the work's).
 * Prints "ready" once it consumes.
 */
import { parseArgs } from 'node:util';
import { connect } from '@nats-io/transport-node';
import { startDurableRunner } from '../../dist/reference/jetstream/index.js';
import { LEAN_CLIENT } from '../../dist/reference/transports/nats/index.js';

const { values } = parseArgs({
  options: { server: { type: 'string' }, 'agent-id': { type: 'string' }, capability: { type: 'string' }, batch: { type: 'string' } },
});
// The connection's options are those `tap serve --durable` opens its runners' connection with.
const nc = await connect({ servers: values.server!, ...LEAN_CLIENT });
const runner = await startDurableRunner({
  nc,
  agentId: values['agent-id']!,
  capability: values.capability!,
  concurrency: Number(values.batch ?? 8),
  handler: async ({ record }) => record.context.current_input,
});
process.on('SIGTERM', () => void runner.stop().finally(() => nc.close().finally(() => process.exit(0))));
process.stdout.write('ready\n');
