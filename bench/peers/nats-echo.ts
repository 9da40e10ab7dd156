/**
 * The bare floor of the mesh rows: a NATS subscriber that answers every request on its subject
 * with the request's own body, nothing else (no TAP, no JSON). Prints `ready` on stdout.
 */
import { connect } from '@nats-io/transport-node';

const [url, subject] = process.argv.slice(2);
const nc = await connect({ servers: url!.replace(/^nats:\/\//, '') });
nc.subscribe(subject!, {
  callback: (_err, msg) => {
    msg.respond(msg.data);
  },
});
await nc.flush();
process.stdout.write('ready\n');
process.on('SIGTERM', () => void nc.close().then(() => process.exit(0)));
