/**
 * The JetStream streams and bucket of the NATS binding's durable tasks (spec: bindings-nats#task-queue):
 * TAP_TASKS (work queue of task records, one subject per capability), TAP_RESULTS (finished
 * records), TAP_EVENTS (each durable task's stream of TAP messages), TAP_DEAD (dead letters),
 * TAP_ADVISORIES (the server's max-deliveries advisories of the queue's consumers, kept until a
 * runner answers each) and the key-value bucket TAP_IDEMPOTENCY.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { RetentionPolicy, StorageType, jetstreamManager, Kvm } from '../transports/nats/client.ts';
import { replicasFor } from '../transports/nats/replicas.ts';
import { maxDeliveriesAdvisory, Wildcard } from '../transports/nats/subjects.ts';
import { checkNames, DEFAULT_NAMES, deadSubject, eventSubject, resultSubject, taskSubject, type DurableNames } from './names.ts';

export { checkNames, DEFAULT_NAMES, deadSubject, eventSubject, resultSubject, taskSubject, type DurableNames } from './names.ts';

/** Options of `ensureStreams`. */
export interface EnsureOptions {
  names?: DurableNames;
  /** Replicas of every stream and of the bucket (default: three on a cluster of three servers or more, one on a single server; spec: bindings-nats#replicas). */
  replicas?: number;
  /** The de-duplication window of TAP_TASKS in ms (default 120 000). */
  duplicateWindowMs?: number;
}

const nanos = (ms: number): number => ms * 1_000_000;

/** Creates the streams and the bucket when missing; resolves with the manager and the bucket. */
export async function ensureStreams(nc: NatsConnection, o: EnsureOptions = {}): Promise<{ jsm: JetStreamManager; idempotency: KV }> {
  const n = checkNames(o.names ?? DEFAULT_NAMES);
  const replicas = replicasFor(nc, o.replicas);
  const jsm = await jetstreamManager(nc);
  const want = [
    // spec: bindings-nats#task-queue: the queue has work-queue retention.
    {
      name: n.tasks,
      subjects: [taskSubject(n, Wildcard.TAIL)],
      retention: RetentionPolicy.Workqueue,
      duplicate_window: nanos(o.duplicateWindowMs ?? 120_000),
    },
    { name: n.results, subjects: [resultSubject(n, Wildcard.TAIL)], retention: RetentionPolicy.Limits },
    // spec: bindings-nats#event-streams: one subject per task, de-duplicated by <task_id>:<sequence>.
    {
      name: n.events,
      subjects: [eventSubject(n, Wildcard.TAIL)],
      retention: RetentionPolicy.Limits,
      duplicate_window: nanos(o.duplicateWindowMs ?? 120_000),
    },
    { name: n.dead, subjects: [deadSubject(n, Wildcard.TAIL)], retention: RetentionPolicy.Limits },
    // spec: bindings-nats#dead-letters: an advisory is kept until a runner answers it, heard or not when it came.
    { name: n.advisories, subjects: [maxDeliveriesAdvisory(n.tasks, Wildcard.TOKEN)], retention: RetentionPolicy.Workqueue },
  ];
  for (const s of want) {
    try {
      await jsm.streams.info(s.name);
    } catch {
      await jsm.streams.add({ ...s, storage: StorageType.File, num_replicas: replicas });
    }
  }
  const idempotency = await new Kvm(nc).create(n.idempotency, { replicas });
  return { jsm, idempotency };
}
