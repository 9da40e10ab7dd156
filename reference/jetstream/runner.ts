/**
 * The durable runner of the NATS binding (spec: bindings-nats#task-queue): it consumes one
 * capability's queue on TAP_TASKS through a durable pull consumer whose ack_wait is the lease,
 * renews the lease with in-progress acknowledgements, takes the attempt number from the
 * delivery count, publishes the finished record before it acknowledges, keeps idempotency in
 * TAP_IDEMPOTENCY beyond the de-duplication window, publishes each task's messages to
 * TAP_EVENTS, hands retryable failures back to the server, and turns max-deliveries advisories
 * into dead letters.
 */
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { ConsumerMessages, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import { AckPolicy, DeliverPolicy, jetstream } from '../transports/nats/client.ts';
import { TapError, type ErrorPayload } from '../core/errors.ts';
import type { TaskRecord } from '../workspace/record.ts';
import { lastStoredMessage, StreamFenced, TaskStreamWriter } from './events.ts';
import { DEFAULT_NAMES, deadSubject, ensureStreams, resultSubject, type DurableNames } from './streams.ts';
import { idempotencyKey } from './submit.ts';

/** What a phase handler gets: the record (attempts set from the delivery count) and a stop signal. */
export interface DurableWork {
  record: TaskRecord;
  /** The attempt: the delivery count less one (spec: bindings-nats#task-queue). */
  attempts: number;
  /** Aborted when the lease is lost (the server refused an acknowledgement) or the runner stops. */
  signal: AbortSignal;
  /** Publishes an output event `{ kind: "output", data }` to the task's stream in TAP_EVENTS (spec: bindings-nats#event-streams). */
  emit(data: unknown): Promise<void>;
}

/** Options of `startDurableRunner`. */
export interface DurableRunnerOptions {
  nc: NatsConnection;
  /** This agent's id, written to `state.processed_by`. */
  agentId: string;
  /** The capability (the records' `next_phase`) this runner serves. */
  capability: string;
  /**
   * Does the phase's work; its resolved value becomes the output of the history entry. A
   * TapError that is retryable hands the delivery back to the server (spec: bindings-nats#retries).
   */
  handler: (work: DurableWork) => Promise<unknown>;
  /** The lease: the consumer's ack_wait, in ms (default 30 000). */
  leaseMs?: number;
  /** Deliveries before a record becomes a dead letter: the consumer's max_deliver (default 5). */
  maxAttempts?: number;
  /** Tasks run at once (default 4). */
  concurrency?: number;
  /**
   * How long one pull request waits before the next is issued, in ms (default 5000, at least
   * 1000): after a server of a cluster is lost, a runner finds the new consumer leader within it.
   */
  pullExpiresMs?: number;
  names?: DurableNames;
  replicas?: number;
  logger?: (level: 'info' | 'warn' | 'error', message: string) => void;
}

/** A running durable runner. */
export interface DurableRunner {
  /** Counts for monitoring and tests. */
  readonly stats: {
    completed: number;
    failed: number;
    retried: number;
    repeats: number;
    deadLetters: number;
    renewals: number;
    /** Deliveries stopped because another delivery of the same record was writing its task's stream. */
    fenced: number;
  };
  /** Stops taking deliveries and waits for the running ones to settle. */
  stop(): Promise<void>;
}

/** The durable consumer's name for a capability: dots are not allowed in consumer names. */
export function consumerName(capability: string): string {
  return `tap-${capability.replace(/[^A-Za-z0-9_-]/g, '_')}`;
}

const nanos = (ms: number): number => ms * 1_000_000;
const ms = (n: number): number => Math.round(n / 1_000_000);

/**
 * Creates the capability's consumer when missing; ack_wait is the lease and max_deliver the
 * attempts. A consumer an earlier runner left with another lease or maximum is set to this
 * runner's, with a warning; resolves with the consumer's name and the ack_wait it has.
 */
async function ensureConsumer(
  jsm: JetStreamManager,
  names: DurableNames,
  o: DurableRunnerOptions,
  log: NonNullable<DurableRunnerOptions['logger']>,
): Promise<{ name: string; ackWaitMs: number }> {
  const name = consumerName(o.capability);
  const want = { ack_wait: nanos(o.leaseMs ?? 30_000), max_deliver: o.maxAttempts ?? 5 };
  const subject = `${names.prefix}.tasks.${o.capability}`;
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
      `${was}; the server refused this runner's lease of ${ms(want.ack_wait)} ms and ${want.max_deliver} deliveries (${(err as Error).message}), so the consumer keeps its own and the lease is renewed every ${Math.floor(ms(had.ack_wait) / 3)} ms. Delete the consumer (nats consumer rm ${names.tasks} ${name}) while no runner serves it to start afresh`,
    );
    return { name, ackWaitMs: ms(had.ack_wait) };
  }
}

/** Why the server refused to create a capability's consumer, with the consumer in the way when there is one. */
async function refusedConsumer(jsm: JetStreamManager, names: DurableNames, name: string, subject: string, err: Error): Promise<string> {
  const why = `cannot create consumer ${name} of ${names.tasks} for ${subject}: ${err.message}`;
  // A work queue gives each subject to one consumer: another that takes it is in the way.
  for await (const c of jsm.consumers.list(names.tasks)) {
    const filters = [c.config.filter_subject, ...(c.config.filter_subjects ?? [])].filter(Boolean);
    if (c.name !== name && (filters.length === 0 || filters.includes(subject) || filters.includes(`${names.prefix}.tasks.>`)))
      return `${why}. Consumer ${c.name} already takes it; if no runner serves it any more, delete it (nats consumer rm ${names.tasks} ${c.name})`;
  }
  return why;
}

/** The record a phase leaves: a history entry, the status, and next_phase null (one-phase tasks). */
function finished(record: TaskRecord, agentId: string, attempts: number, outcome: { output?: unknown; error?: Error }): TaskRecord {
  const now = new Date().toISOString();
  const next = structuredClone(record);
  next.context.history.push({
    agent: agentId,
    phase: record.next_phase ?? '',
    timestamp: now,
    input: record.context.current_input,
    output: outcome.error ? null : (outcome.output ?? null),
    artifacts: [],
  });
  next.current_phase = record.next_phase;
  next.next_phase = null;
  next.state.attempts = attempts;
  next.state.processed_by = agentId;
  next.state.status = outcome.error ? 'failed' : 'completed';
  const code = outcome.error instanceof TapError ? outcome.error.payload.code : 'EXECUTION_FAILED';
  next.state.last_error = outcome.error ? { code, message: outcome.error.message.slice(0, 8192), at: now } : null;
  return next;
}

/** The payload of the task.result that ends a durable task's stream. */
function resultPayload(outcome: { output?: unknown; error?: Error }): Record<string, unknown> {
  if (!outcome.error) return { status: 'completed', output: outcome.output ?? null };
  if (outcome.error instanceof TapError) return { status: 'failed', error: outcome.error.payload };
  return { status: 'failed', error: { code: 'INTERNAL_ERROR', message: outcome.error.message.slice(0, 8192), retryable: false } };
}

/** The outcome a stored task.result states: its output, or its error (spec: bindings-nats#event-streams). */
function outcomeOfResult(payload: Record<string, unknown>): { output?: unknown; error?: Error } {
  if (payload.status === 'completed') return { output: payload.output ?? null };
  return { error: new TapError(payload.error as ErrorPayload) };
}

/** Starts consuming a capability's queue (spec: bindings-nats#task-queue). */
export async function startDurableRunner(o: DurableRunnerOptions): Promise<DurableRunner> {
  const names = o.names ?? DEFAULT_NAMES;
  const log = o.logger ?? (() => {});
  const { jsm, idempotency } = await ensureStreams(o.nc, { names, replicas: o.replicas });
  const { name: durable, ackWaitMs } = await ensureConsumer(jsm, names, o, log);
  // spec: bindings-nats#task-queue: the lease is the consumer's ack_wait, whatever this runner asked for.
  const leaseMs = Math.min(o.leaseMs ?? 30_000, ackWaitMs);
  const js = jetstream(o.nc);
  const stats = { completed: 0, failed: 0, retried: 0, repeats: 0, deadLetters: 0, renewals: 0, fenced: 0 };
  const stopping = new AbortController();
  const running = new Set<Promise<void>>();

  /** spec: bindings-nats#idempotency: the first task to create the key owns it, whatever the window. */
  const claimKey = async (record: TaskRecord): Promise<'first' | 'repeat'> => {
    const idem = (record.metadata as { 'x-idempotency'?: { principal: string; key: string } })['x-idempotency'];
    if (!idem) return 'first';
    const key = idempotencyKey(idem.principal, o.capability, idem.key);
    try {
      await idempotency.create(key, record.task_id);
      return 'first';
    } catch {
      const owner = (await idempotency.get(key))?.string();
      // A redelivery of the owning task is not a repeat (spec: bindings-nats#idempotency).
      return owner === record.task_id ? 'first' : 'repeat';
    }
  };

  const storedResult = async (taskId: string): Promise<boolean> => {
    const stored = await jsm.streams.getMessage(names.results, { last_by_subj: resultSubject(names, taskId) }).catch(() => null);
    return stored !== null;
  };

  const work = async (m: JsMsg): Promise<void> => {
    let record: TaskRecord;
    try {
      record = m.json<TaskRecord>();
    } catch (err) {
      log('warn', `a message on ${m.subject} is not a task record (${(err as Error).message}); terminating it`);
      m.term();
      return;
    }
    const attempts = m.info.deliveryCount - 1;
    // spec: bindings-nats#task-queue: renew at least every ack_wait / 3, from the delivery's arrival until it is settled.
    const renew = setInterval(
      () => {
        m.working();
        stats.renewals++;
      },
      Math.max(10, Math.floor(leaseMs / 3)),
    );
    try {
      await settle(m, record, attempts);
    } finally {
      clearInterval(renew);
    }
  };

  /**
   * Runs a delivery and settles it: acknowledged, handed back (-NAK), or left to redeliver when a
   * publish fails. spec: bindings-nats#event-streams (TAP-NATS-036): a delivery that finds another
   * writing its task's stream stops there, unacknowledged; the other one finishes the task.
   */
  const settle = async (m: JsMsg, record: TaskRecord, attempts: number): Promise<void> => {
    try {
      await run(m, record, attempts);
    } catch (err) {
      if (!(err instanceof StreamFenced)) throw err;
      stats.fenced++;
      log('info', `${err.message}; this delivery (attempt ${attempts}) stops unacknowledged`);
    }
  };

  const run = async (m: JsMsg, record: TaskRecord, attempts: number): Promise<void> => {
    // A redelivery of a task whose finished record is stored (its acknowledgement was lost) only needs the acknowledgement.
    if (attempts > 0 && (await storedResult(record.task_id))) {
      stats.repeats++;
      await m.ackAck();
      return;
    }
    if ((await claimKey(record)) === 'repeat') {
      stats.repeats++;
      await m.ackAck();
      return;
    }
    // spec: bindings-nats#event-streams: a redelivery numbers the task's messages on from the last stored one.
    // If either fails, the delivery is not acknowledged and comes again.
    const last = await lastStoredMessage(jsm, names, record.task_id);
    // A stream that ends with the task.result is a phase that finished in an earlier delivery whose
    // finished record was not stored: it is stored from that result, and the phase is not run again.
    if (last?.message.type === 'task.result') {
      await finish(m, record, last.attempt ?? attempts, outcomeOfResult(last.message.payload));
      return;
    }
    const stream = new TaskStreamWriter(js, names, o.agentId, record.task_id, last?.message.sequence ?? 0, attempts);
    await stream.publish('task.event', { kind: 'state', state: 'running' });
    const lost = new AbortController();
    const onStop = () => lost.abort();
    stopping.signal.addEventListener('abort', onStop);
    let outcome: { output?: unknown; error?: Error };
    let fenced: StreamFenced | undefined;
    try {
      const emit = async (data: unknown): Promise<void> => {
        if (lost.signal.aborted) return;
        try {
          await stream.publish('task.event', { kind: 'output', data });
        } catch (err) {
          if (err instanceof StreamFenced) {
            fenced = err;
            lost.abort();
          }
          throw err;
        }
      };
      outcome = {
        output: await o.handler({ record: { ...record, state: { ...record.state, attempts } }, attempts, signal: lost.signal, emit }),
      };
    } catch (err) {
      outcome = { error: err instanceof Error ? err : new Error(String(err)) };
    } finally {
      stopping.signal.removeEventListener('abort', onStop);
    }
    if (fenced) throw fenced;
    if (lost.signal.aborted) return;
    // spec: bindings-nats#retries: a retryable failure is a delivery that did not finish; the server delivers it again.
    if (outcome.error instanceof TapError && outcome.error.payload.retryable) {
      const { code, message } = outcome.error.payload;
      await stream.publish('task.event', {
        kind: 'log',
        level: 'warn',
        message: `attempt ${attempts} failed with ${code}: ${message}`.slice(0, 65536),
      });
      m.nak();
      stats.retried++;
      return;
    }
    await stream.publish('task.result', resultPayload(outcome));
    await finish(m, record, attempts, outcome);
  };

  /** Stores the finished record of a phase's outcome in TAP_RESULTS, then acknowledges the delivery. */
  const finish = async (m: JsMsg, record: TaskRecord, attempts: number, outcome: { output?: unknown; error?: Error }): Promise<void> => {
    const next = finished(record, o.agentId, attempts, outcome);
    // spec: bindings-nats#task-queue: the finished record is stored before the delivery is acknowledged;
    // one message id per task, so that the server keeps the first finished record only.
    await js.publish(resultSubject(names, record.task_id), JSON.stringify(next), { msgID: `${record.task_id}:result` });
    if (!(await m.ackAck().catch(() => false))) {
      log('warn', `task ${record.task_id}: the server refused the acknowledgement; its lease had expired`);
      return;
    }
    if (outcome.error) stats.failed++;
    else stats.completed++;
  };

  // spec: bindings-nats#dead-letters: a record that ran out of deliveries goes to TAP_DEAD, then leaves the queue.
  const advisory: Subscription = o.nc.subscribe(`$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${names.tasks}.${durable}`, {
    callback: (err, msg) => {
      if (err) return;
      const { stream_seq: seq, deliveries } = msg.json<{ stream_seq: number; deliveries: number }>();
      void (async () => {
        try {
          const stored = await jsm.streams.getMessage(names.tasks, { seq });
          if (!stored) return;
          const record = stored.json<TaskRecord>();
          const now = new Date().toISOString();
          record.state.attempts = deliveries;
          record.state.status = 'failed';
          record.state.last_error = {
            code: 'MAX_ATTEMPTS',
            message: `the phase was delivered ${deliveries} times without finishing`,
            at: now,
          };
          // One message id per queue message: a requeued record that dies again is a new dead letter.
          await js.publish(deadSubject(names, o.capability), JSON.stringify(record), { msgID: `${record.task_id}:dead:${seq}` });
          await jsm.streams.deleteMessage(names.tasks, seq);
          stats.deadLetters++;
        } catch (e) {
          log('error', `could not move the dead letter at ${names.tasks} sequence ${seq}: ${(e as Error).message}`);
        }
      })();
    },
  });

  const consumer = await js.consumers.get(names.tasks, durable);
  const messages: ConsumerMessages = await consumer.consume({
    max_messages: o.concurrency ?? 4,
    expires: Math.max(1000, o.pullExpiresMs ?? 5000),
  });
  const loop = (async () => {
    for await (const m of messages) {
      const p = work(m).catch((err: Error) => log('error', `task on ${m.subject}: ${err.message}`));
      running.add(p);
      void p.finally(() => running.delete(p));
      while (running.size >= (o.concurrency ?? 4)) await Promise.race(running);
    }
  })();

  return {
    stats,
    async stop() {
      await messages.close();
      await loop;
      await Promise.all(running);
      stopping.abort();
      advisory.unsubscribe();
    },
  };
}
