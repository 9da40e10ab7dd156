/**
 * A durable runner that "crashes" holding a delivery, for the tests of redelivery and dead
 * letters: a runner process that vanishes mid-task, its record never acknowledged.
 */
import { connect } from '@nats-io/transport-node';
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
