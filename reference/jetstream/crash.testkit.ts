/**
 * A durable runner that "crashes" holding a delivery, for the tests of redelivery and dead
 * letters: a runner process that vanishes mid-task, its record never acknowledged.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '../transports/nats/client.ts';
import { consumerName } from './consumer.ts';
import { DEFAULT_NAMES } from './names.ts';
import { startDurableRunner } from './runner.ts';

/**
 * Starts a runner of `capability` on a connection of its own, waits until its handler holds a
 * delivery, then closes the connection with the handler still running: the record is neither
 * acknowledged nor refused, and the server delivers it again a lease (the consumer's ack_wait,
 * `leaseMs`) later, or sends its max-deliveries advisory once `maxAttempts` deliveries are spent.
 */
export async function crashWhileHolding(
  serverUrl: string,
  o: { capability: string; leaseMs: number; maxAttempts: number; agentId?: string },
): Promise<void> {
  const conn = await connect({ servers: serverUrl });
  let holding!: () => void;
  const held = new Promise<void>((r) => (holding = r));
  await startDurableRunner({
    nc: conn,
    agentId: o.agentId ?? 'tap.crashing-runner',
    capability: o.capability,
    leaseMs: o.leaseMs,
    maxAttempts: o.maxAttempts,
    handler: () => {
      holding();
      return new Promise(() => {});
    },
  });
  await held;
  await conn.close();
}

/**
 * A pull request waiting on the capability's consumer from `nc`, a connection that answers no
 * advisory, standing for a crashed runner's pull that the server still holds (it drops such a pull
 * when it finds its connection gone, at a moment of its own): with a pull waiting, the server tries
 * a record again as its lease runs out, finds its deliveries spent and publishes the max-deliveries
 * advisory then, with no runner connected to hear it. Resolves when the pull expires.
 */
export async function strayPull(nc: NatsConnection, capability: string, expiresMs: number): Promise<void> {
  const consumer = await jetstream(nc).consumers.get(DEFAULT_NAMES.tasks, consumerName(capability));
  const m = await consumer.next({ expires: expiresMs });
  if (m) throw new Error(`the stray pull on ${capability} was given stream sequence ${m.seq}: the record had deliveries left`);
}
