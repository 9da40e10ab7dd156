/**
 * The durable runner of the NATS binding (spec: bindings-nats#task-queue): it consumes one
 * capability's queue on TAP_TASKS through a durable pull consumer whose ack_wait is the lease,
 * checks each message before it looks anything up with it (and, given a trust file, its
 * submitter's signature), renews the lease with in-progress acknowledgements, takes the attempt
 * number from the delivery count, publishes the finished record before it acknowledges, keeps
 * idempotency in TAP_IDEMPOTENCY beyond the de-duplication window, publishes each task's messages
 * to TAP_EVENTS, hands retryable failures back to the server, and turns refused messages and
 * max-deliveries advisories into dead letters.
 */
import { extended } from '../core/extended.ts';
import { traceContextOf } from '../core/trace-context.ts';
import { loadTelemetry, type TapSpan, type TelemetryOptions } from '../telemetry.ts';
import type { NatsConnection } from '@nats-io/transport-node';
import type { ConsumerMessages, JsMsg } from '@nats-io/jetstream';
import { jetstream } from '../transports/nats/client.ts';
import { TapError } from '../core/errors.ts';
import type { SigningKey, TrustFile } from '../trust.ts';
import { checkIdentifier } from '../transports/nats/subjects.ts';
import type { TaskRecord } from '../workspace/record.ts';
import { consumerSettled, deletedNotice, ensureConsumer, SETTLE_MS } from './consumer.ts';
import { publishDeadLetter, refusedLetter, answerMaxDeliveries, type DeadLetterBox } from './dead-letters.ts';
import { lastStoredMessage, StreamFenced, TaskStreamWriter, traceOfRecord, type StoredStreamMessage } from './events.ts';
import { takeIn } from './intake.ts';
import { checkNames } from './names.ts';
import { capabilityFailure, speaks11 } from '../workspace/capability-failure.ts';
import { finished, outcomeOfResult, resultPayload, type Outcome } from './outcome.ts';
import { verifyStreamMessage } from './signatures.ts';
import { durableAuditEntry, runnerFamilies, type AuditSink } from './metrics.ts';
import { Histogram, type Family } from '../ops/prometheus.ts';
import { DEFAULT_NAMES, ensureStreams, resultSubject, type DurableNames } from './streams.ts';
import { idempotencyKey } from './submit.ts';
import { EffectsRecords } from './effects.ts';

export { consumerName } from './consumer.ts';
export type { DurableRunner, DurableRunnerOptions, DurableWork } from './runner-options.ts';
import { checkOptions, type DurableRunner, type DurableRunnerOptions, type DurableWork } from './runner-options.ts';

/** The event that begins each delivery's run (spec: bindings-nats#event-streams, TAP-NATS-030). */
const RUNNING = Object.freeze({ kind: 'state', state: 'running' });

/** How long a stopping runner waits for the server to have its last acknowledgements. */
const FLUSH_MS = 2000;

/** How long the server waits before it delivers again a record handed back for another target agent. */
const HAND_BACK_DELAY_MS = 100;

/** Starts consuming a capability's queue (spec: bindings-nats#task-queue). */
export async function startDurableRunner(o: DurableRunnerOptions): Promise<DurableRunner> {
  checkOptions(o);
  const names = o.names ?? DEFAULT_NAMES;
  const log = o.logger ?? (() => {});
  const runners = o.runners ?? [o.agentId];
  const { jsm, idempotency } = await ensureStreams(o.nc, { names, replicas: o.replicas });
  const { name: durable, ackWaitMs } = await ensureConsumer(jsm, names, o, log);
  if (!(await consumerSettled(jsm, names.tasks, durable)))
    log(
      'warn',
      `consumer ${durable} of ${names.tasks} has no leader with every replica current after ${SETTLE_MS} ms; pulling all the same`,
    );
  // spec: bindings-nats#task-queue: the lease is the consumer's ack_wait, whatever this runner asked for.
  const leaseMs = Math.min(o.leaseMs ?? 30_000, ackWaitMs);
  const js = jetstream(o.nc);
  const telemetry = o.telemetry ? await loadTelemetry(o.telemetry) : undefined;
  const stats = {
    completed: 0,
    failed: 0,
    retried: 0,
    repeats: 0,
    deadLetters: 0,
    refused: 0,
    renewals: 0,
    fenced: 0,
    handedBack: 0,
    redelivered: 0,
  };
  const durations = new Histogram();
  const arrived = new WeakMap<JsMsg, number>();
  const stopping = new AbortController();
  const running = new Set<Promise<void>>();
  const box: DeadLetterBox = { js, jsm, names, agentId: o.agentId, intake: { capability: o.capability, trust: o.trust } };
  // spec: bindings-nats#idempotency (TAP-NATS-025): a redelivery gets the effects record of the deliveries before it.
  const effects = new EffectsRecords();

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

  /** Whether a stored task.result may decide the task's outcome: this task's, and with a trust file, signed by a runner. */
  const trustedResult = (last: StoredStreamMessage, record: TaskRecord): boolean => {
    if (last.message.type !== 'task.result' || last.message.task_id !== record.task_id) return false;
    if (!o.trust) return true;
    if (verifyStreamMessage(last.message, last.attempt, last.signature, o.trust, runners)) return true;
    log(
      'warn',
      `task ${record.task_id}: its stream ends with a task.result that no trusted runner signed; it is ignored and the phase runs`,
    );
    return false;
  };

  /** spec: bindings-nats#task-queue (TAP-NATS-037, TAP-NATS-038): a message this runner may not run is a dead letter at once. */
  const refuse = async (m: JsMsg, refused: Extract<ReturnType<typeof takeIn>, { ok: false }>): Promise<void> => {
    const letter = refusedLetter(m.data, refused, m.seq, m.info.deliveryCount, o.agentId);
    log('warn', `${names.tasks} sequence ${m.seq} on ${m.subject} is a dead letter: ${refused.problem.code}: ${refused.problem.message}`);
    await publishDeadLetter(box, letter, m.seq);
    // Acknowledged, the message leaves the work queue.
    await m.ackAck();
    stats.refused++;
  };

  const work = async (m: JsMsg): Promise<void> => {
    arrived.set(m, Date.now());
    if (m.info.redelivered) stats.redelivered++;
    const intake = takeIn(m.data, box.intake);
    if (!intake.ok) return refuse(m, intake);
    // spec: bindings-nats#task-queue (TAP-NATS-055): another agent's record goes back for the server to deliver again.
    const target = intake.record.requirements.target_agent;
    if (target !== '' && target !== o.agentId) {
      stats.handedBack++;
      m.nak(HAND_BACK_DELAY_MS);
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
      await settle(m, intake.record, attempts, intake.principal);
    } finally {
      clearInterval(renew);
    }
  };

  /**
   * Runs a delivery and settles it: acknowledged, handed back (-NAK), or left to redeliver when a
   * publish fails. spec: bindings-nats#event-streams (TAP-NATS-036): a delivery that finds another
   * writing its task's stream stops there, unacknowledged; the other one finishes the task.
   */
  const settle = async (m: JsMsg, record: TaskRecord, attempts: number, principal: string | undefined): Promise<void> => {
    try {
      await run(m, record, attempts, principal);
    } catch (err) {
      if (!(err instanceof StreamFenced)) throw err;
      stats.fenced++;
      log('info', `${err.message}; this delivery (attempt ${attempts}) stops unacknowledged`);
    }
  };

  /** Acknowledges a delivery that needs no run: its task's finished record is stored, or the task repeats another. */
  const repeat = async (m: JsMsg): Promise<void> => {
    stats.repeats++;
    await m.ackAck();
  };

  /** The writer of a task's stream for a delivery, numbering on from `lastSequence`. */
  const writer = (record: TaskRecord, lastSequence: number, attempts: number): TaskStreamWriter =>
    new TaskStreamWriter(
      js,
      names,
      o.agentId,
      record.task_id,
      lastSequence,
      attempts,
      o.signingKey,
      traceOfRecord(record.metadata),
      speaks11(record) ? 'tap/1.1' : 'tap/1.0',
    );

  const run = async (m: JsMsg, record: TaskRecord, attempts: number, principal: string | undefined): Promise<void> => {
    // A first delivery's stream is nearly always empty: it stores its running event on that
    // condition, with no read before. A stream that holds a message (a record published again)
    // refuses the condition, and the delivery goes the way of a redelivery.
    if (m.info.deliveryCount === 1) {
      if ((await claimKey(record)) === 'repeat') return repeat(m);
      const stream = writer(record, 0, attempts);
      if (await stream.publishFirst('task.event', RUNNING)) return runPhase(m, record, attempts, principal, stream);
    }
    // spec: bindings-nats#event-streams: a redelivery numbers the task's messages on from the last stored one.
    // If a read fails, the delivery is not acknowledged and comes again.
    const last = await lastStoredMessage(jsm, names, record.task_id);
    // A task whose finished record is stored (its acknowledgement was lost, or the record was published
    // again) only needs the acknowledgement. Its task.result is stored before its finished record
    // (TAP-NATS-032), so a task with no message in its stream has none, and the read is spared.
    if (last && (await storedResult(record.task_id))) return repeat(m);
    if ((await claimKey(record)) === 'repeat') return repeat(m);
    // A stream that ends with the task.result is a phase that finished in an earlier delivery whose
    // finished record was not stored: it is stored from that result, and the phase is not run again.
    if (last && trustedResult(last, record)) {
      await finishTask(m, record, last.attempt ?? attempts, outcomeOfResult(last.message.payload), principal);
      return;
    }
    const stream = writer(record, Number.isSafeInteger(last?.message.sequence) ? last!.message.sequence : 0, attempts);
    await stream.publish('task.event', RUNNING);
    return runPhase(m, record, attempts, principal, stream);
  };

  /** Runs the phase of a delivery whose running event `stream` stored, and settles the delivery. */
  const runPhase = async (
    m: JsMsg,
    record: TaskRecord,
    attempts: number,
    principal: string | undefined,
    stream: TaskStreamWriter,
  ): Promise<void> => {
    const finish = (attempt: number, outcome: Outcome) => finishTask(m, record, attempt, outcome, principal);
    const lost = new AbortController();
    const onStop = () => lost.abort();
    stopping.signal.addEventListener('abort', onStop);
    let outcome: Outcome;
    let fenced: StreamFenced | undefined;
    let span: TapSpan | undefined;
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
      const given = extended(record, { state: extended(record.state, { attempts }) });
      span = telemetry?.start(
        `process ${o.capability}`,
        'consumer',
        { traceContext: traceContextOf(record.metadata) },
        {
          'tap.task_id': record.task_id,
          'tap.capability': o.capability,
          'tap.attempt': attempts + 1,
          'tap.agent': o.agentId,
        },
      );
      const effect = <T>(name: string, fn: () => T | Promise<T>): Promise<T> => effects.once(record.task_id, name, fn);
      outcome = {
        output: await o.handler({ record: given, attempts, ...(principal ? { principal } : {}), signal: lost.signal, emit, effect }),
      };
    } catch (err) {
      outcome = { error: err instanceof Error ? err : new Error(String(err)) };
    } finally {
      stopping.signal.removeEventListener('abort', onStop);
    }
    const code = outcome.error instanceof TapError ? outcome.error.payload.code : outcome.error ? 'INTERNAL_ERROR' : undefined;
    span?.end({ outcome: lost.signal.aborted ? 'lost' : outcome.error ? 'failed' : 'completed', code });
    if (fenced) throw fenced;
    if (lost.signal.aborted) return;
    // spec: bindings-nats#retries: a retryable failure is a delivery that did not finish; the server delivers it again.
    // A failure the capability reported transient is retryable too (spec: bindings-nats#durable-1-1).
    const failure =
      outcome.error && (capabilityFailure(outcome.error, record) ?? (outcome.error instanceof TapError ? outcome.error.payload : null));
    if (failure?.retryable) {
      const { code, message } = failure;
      await stream.publish('task.event', {
        kind: 'log',
        level: 'warn',
        message: `attempt ${attempts} failed with ${code}: ${message}`.slice(0, 65536),
      });
      m.nak();
      stats.retried++;
      return;
    }
    await stream.publish('task.result', resultPayload(outcome, record));
    await finish(attempts, outcome);
  };

  /** Stores the finished record of a phase's outcome in TAP_RESULTS, then acknowledges the delivery. */
  const finishTask = async (m: JsMsg, record: TaskRecord, attempts: number, outcome: Outcome, principal?: string): Promise<void> => {
    const next = finished(record, o.agentId, attempts, outcome);
    // spec: bindings-nats#task-queue: the finished record is stored before the delivery is acknowledged;
    // one message id per task, so that the server keeps the first finished record only.
    const stored = await js.publish(resultSubject(names, record.task_id), JSON.stringify(next), { msgID: `${record.task_id}:result` });
    // The acknowledgement asks for no answer: one the server drops (a lease that ran out) brings a
    // delivery again, which finds the finished record stored and only acknowledges.
    m.ack();
    effects.forget(record.task_id);
    // Another delivery of the task stored its finished record first: that delivery counts the task.
    if (stored.duplicate) {
      log('info', `task ${record.task_id}: its finished record was stored already, by another delivery`);
      return;
    }
    if (outcome.error) stats.failed++;
    else stats.completed++;
    const outcomeName = outcome.error ? 'failed' : 'completed';
    durations.observe((Date.now() - (arrived.get(m) ?? Date.now())) / 1000, { capability: o.capability, outcome: outcomeName });
    o.audit?.append(durableAuditEntry(o.agentId, o.capability, record, attempts, outcome, principal));
  };

  // spec: bindings-nats#dead-letters: a record that ran out of deliveries goes to TAP_DEAD, then leaves the queue.
  const advisories = await answerMaxDeliveries(box, durable, { onMoved: () => stats.deadLetters++, log, pullExpiresMs: o.pullExpiresMs });

  const concurrency = o.concurrency ?? 4;
  const expires = Math.max(1000, o.pullExpiresMs ?? 5000);
  const consumer = await js.consumers.get(names.tasks, durable).catch(async (err: Error) => {
    await advisories.stop();
    throw err;
  });
  // A runner pulls only as many deliveries as it has places free: a delivery the client held
  // beyond those would wait unrenewed in its buffer while the runner's places are busy, its lease
  // would run out, and the server would deliver it again, to run twice (measured: two places,
  // a lease of 1 s, six tasks of 2.5 s: four of them ran twice). One pull asks for every free place.
  let stopped = false;
  let batch: ConsumerMessages | undefined;
  let said = '';
  const loop = (async () => {
    while (!stopped) {
      while (running.size >= concurrency) await Promise.race(running);
      if (stopped) break;
      try {
        batch = await consumer.fetch({ max_messages: concurrency - running.size, expires });
        // Closed before it is read: the client's close resolves only once its messages are drained.
        if (stopped) batch.close().catch(() => {});
        for await (const m of batch) {
          const p = work(m).catch((err: Error) => log('error', `task on ${m.subject}: ${err.message}`));
          running.add(p);
          void p.finally(() => running.delete(p));
        }
        said = '';
      } catch (err) {
        if (stopped) break;
        // A pull the server refused (its consumer deleted, its stream gone): said once, tried again each second.
        const why = /consumer (?:not found|deleted)|no responders/i.test((err as Error).message)
          ? deletedNotice(`consumer ${durable} of ${names.tasks}`)
          : `pulling from consumer ${durable} of ${names.tasks} failed: ${(err as Error).message}; trying again`;
        if (why !== said) log('error', why);
        said = why;
        await new Promise((r) => setTimeout(r, 1000));
      } finally {
        batch = undefined;
      }
    }
  })();

  return {
    stats,
    metrics: () => runnerFamilies(o.capability, stats, durations, { jsm, stream: names.tasks, consumer: durable }),
    async stop() {
      stopped = true;
      batch?.close().catch(() => {});
      await loop;
      await Promise.all(running);
      stopping.abort();
      await advisories.stop();
      // The acknowledgements asked for no answer: one round trip has them all at the server, if it is there.
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([o.nc.flush(), new Promise((r) => (timer = setTimeout(r, FLUSH_MS)))]).catch(() => {});
      clearTimeout(timer);
    },
  };
}
