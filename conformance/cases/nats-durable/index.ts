/** The nats-durable profile's cases, in report order: each file holds the cases of one spec anchor. */
import type { Case } from '../../case.ts';
import * as bindingsNatsTaskQueue from './bindings-nats.task-queue.ts';
import * as bindingsNatsReplicas from './bindings-nats.replicas.ts';
import * as bindingsNatsRetries from './bindings-nats.retries.ts';
import * as bindingsNatsDeadLetters from './bindings-nats.dead-letters.ts';
import * as bindingsNatsIdempotency from './bindings-nats.idempotency.ts';
import * as bindingsNatsEventStreams from './bindings-nats.event-streams.ts';
import * as bindingsNatsSignedRecords from './bindings-nats.signed-records.ts';

export const natsDurableCases: readonly Case[] = [
  bindingsNatsTaskQueue,
  bindingsNatsReplicas,
  bindingsNatsRetries,
  bindingsNatsDeadLetters,
  bindingsNatsIdempotency,
  bindingsNatsEventStreams,
  bindingsNatsSignedRecords,
].flatMap((file) => file.cases);
