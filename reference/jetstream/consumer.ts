/**
 * A capability's durable pull consumer on TAP_TASKS (spec: bindings-nats#task-queue): created when
 * missing, with the runner's lease as its ack_wait and its attempts as its max_deliver; one left
 * by an earlier runner with other settings is set to this runner's, or kept with a warning.
 */
import type { JetStreamManager } from '@nats-io/jetstream';
import { AckPolicy, DeliverPolicy } from '../transports/nats/client.ts';
import { Wildcard } from '../transports/nats/subjects.ts';
import { taskSubject, type DurableNames } from './names.ts';

/** The durable consumer's name for a capability: dots are not allowed in consumer names. */
export function consumerName(capability: string): string {
  return `tap-${capability.replace(/[^A-Za-z0-9_-]/g, '_')}`;
}

/** How long a runner waits for its consumer to settle before it pulls anyway. */
export const SETTLE_MS = 5000;

/**
 * Waits, at most `ms`, until a consumer has a leader and every replica is current; false when it
 * did not. Pulls sent while a new replicated consumer settles its leader can go unanswered, and
 * the runner that sent them then took no delivery for the next 20 s while the others took every
 * one (a three-node cluster, four runners starting together: in 9 runs of 17). A consumer that stays
 * unsettled (a replica's node down) is pulled from all the same.
 */
export async function consumerSettled(jsm: JetStreamManager, stream: string, name: string, ms = SETTLE_MS): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    const info = await jsm.consumers.info(stream, name).catch(() => null);
    const c = info?.cluster;
    if (info && (!c || (c.leader && (c.replicas ?? []).every((r) => r.current)))) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** What the consumer is asked to be. */
export interface ConsumerWish {
  capability: string;
  leaseMs?: number;
  maxAttempts?: number;
}

const nanos = (ms: number): number => ms * 1_000_000;
const ms = (n: number): number => Math.round(n / 1_000_000);

/**
 * Creates the capability's consumer when missing; ack_wait is the lease and max_deliver the
 * attempts. A consumer an earlier runner left with another lease or maximum is set to this
 * runner's, with a warning; resolves with the consumer's name and the ack_wait it has.
 */
export async function ensureConsumer(
  jsm: JetStreamManager,
  names: DurableNames,
  o: ConsumerWish,
  log: (level: 'info' | 'warn' | 'error', message: string) => void,
): Promise<{ name: string; ackWaitMs: number }> {
  const name = consumerName(o.capability);
  const want = { ack_wait: nanos(o.leaseMs ?? 30_000), max_deliver: o.maxAttempts ?? 5 };
  const subject = taskSubject(names, o.capability);
  const found = await jsm.consumers.info(names.tasks, name).catch(() => null);
  if (!found) {
    try {
      await jsm.consumers.add(names.tasks, {
        durable_name: name,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ...want,
        filter_subject: subject,
      });
    } catch (err) {
      throw new Error(await refusedConsumer(jsm, names, name, subject, err as Error), { cause: err });
    }
    return { name, ackWaitMs: ms(want.ack_wait) };
  }
  const had = { ack_wait: found.config.ack_wait ?? nanos(30_000), max_deliver: found.config.max_deliver ?? -1 };
  if (had.ack_wait === want.ack_wait && had.max_deliver === want.max_deliver) return { name, ackWaitMs: ms(had.ack_wait) };
  const was = `consumer ${name} of ${names.tasks} had ack_wait ${ms(had.ack_wait)} ms and max_deliver ${had.max_deliver}`;
  try {
    await jsm.consumers.update(names.tasks, name, want);
    log(
      'warn',
      `${was} (left by an earlier runner); set to this runner's lease of ${ms(want.ack_wait)} ms and ${want.max_deliver} deliveries`,
    );
    return { name, ackWaitMs: ms(want.ack_wait) };
  } catch (err) {
    log(
      'warn',
      `${was}; the server refused this runner's lease of ${ms(want.ack_wait)} ms and ${want.max_deliver} deliveries (${(err as Error).message}), so the consumer keeps its own and the lease is renewed every ${Math.floor(ms(had.ack_wait) / 3)} ms. Delete the consumer (tapctl nats remove-consumer ${name}) while no runner serves it to start afresh`,
    );
    return { name, ackWaitMs: ms(had.ack_wait) };
  }
}

/** Why the server refused to create a capability's consumer, with the consumer in the way when there is one. */
async function refusedConsumer(jsm: JetStreamManager, names: DurableNames, name: string, subject: string, err: Error): Promise<string> {
  const why = `cannot create consumer ${name} of ${names.tasks} for ${subject}: ${err.message}`;
  const all = taskSubject(names, Wildcard.TAIL);
  // A work queue gives each subject to one consumer: another that takes it is in the way.
  for await (const c of jsm.consumers.list(names.tasks)) {
    const filters = [c.config.filter_subject, ...(c.config.filter_subjects ?? [])].filter(Boolean);
    if (c.name !== name && (filters.length === 0 || filters.includes(subject) || filters.includes(all)))
      return `${why}. Consumer ${c.name} already takes it; if no runner serves it any more, delete it (tapctl nats remove-consumer ${c.name})`;
  }
  return why;
}

/**
 * Logs, once, that a consumer a runner pulls from was deleted under it (an operator's
 * `tapctl nats remove-consumer --force`): the client keeps pulling from nothing, so the runner takes
 * no more of it until it is restarted and creates the consumer again. Only the server's word that
 * the consumer was deleted counts: a consumer not found for a moment (its leader being elected)
 * comes back by itself.
 */
export function sayWhenDeleted(
  messages: { status(): AsyncIterable<{ type: string }> },
  what: string,
  log: (level: 'info' | 'warn' | 'error', message: string) => void,
): void {
  void (async () => {
    for await (const s of messages.status())
      if (s.type === 'consumer_deleted') {
        log('error', deletedNotice(what));
        return;
      }
  })().catch(() => {});
}

/** What a runner says of a consumer deleted under it: the one sentence for its pulls of the queue and of the advisories. */
export const deletedNotice = (what: string): string =>
  `${what} was deleted: this runner takes nothing more from it until it is restarted, which creates it again`;
