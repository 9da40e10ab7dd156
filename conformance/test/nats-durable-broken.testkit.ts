/**
 * Durable agents that break one rule of the NATS binding's task queue on purpose, for the
 * self-test of the nats-durable profile: each serves the reference runtime's sessions through
 * a NATS listener and the conformance capabilities through a small runner of its own with one
 * fault, sharing the reference's streams, stream writer and handlers.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, DeliverPolicy, jetstream, type JsMsg } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { createAgent, withConformanceCapabilities } from '../../reference/agent/index.ts';
import { sleep } from '../peer.ts';
import type { TapError } from '../../reference/core/errors.ts';
import { durableConformanceHandlers } from '../../reference/jetstream/capabilities.ts';
import { refusedLetter } from '../../reference/jetstream/dead-letters.ts';
import {
  lastStoredMessage,
  StreamFenced,
  TaskStreamWriter,
  traceOfRecord,
  type StoredStreamMessage,
} from '../../reference/jetstream/events.ts';
import { takeIn } from '../../reference/jetstream/intake.ts';
import { consumerName } from '../../reference/jetstream/runner.ts';
import { EffectsRecords } from '../../reference/jetstream/effects.ts';
import { verifyStreamMessage } from '../../reference/jetstream/signatures.ts';
import { DEFAULT_NAMES as N, deadSubject, ensureStreams, resultSubject, taskSubject } from '../../reference/jetstream/streams.ts';
import { idempotencyKey } from '../../reference/jetstream/submit.ts';
import type { SigningKey, TrustFile } from '../../reference/trust.ts';
import type { TaskRecord } from '../../reference/workspace/record.ts';
import { maxDeliveriesAdvisory } from '../../reference/transports/nats/subjects.ts';

/** The rule each broken durable agent breaks. */
export type DurableFault =
  /** Never sends an in-progress acknowledgement: a long task is redelivered (TAP-NATS-018). */
  | 'no-renewal'
  /** Runs and labels every delivery as attempt 0, whatever the delivery count (TAP-NATS-019). */
  | 'attempt-zero'
  /** Never consults TAP_IDEMPOTENCY: a repeat past the server's window runs again (TAP-NATS-024). */
  | 'no-idempotency'
  /** Ignores the max-deliveries advisory: a record that ran out of deliveries never reaches TAP_DEAD (TAP-NATS-021). */
  | 'no-dead-letters'
  /** Answers the max-deliveries advisories from a subscription to their subject, as the first text had it, not from TAP_ADVISORIES (TAP-NATS-071). */
  | 'subscribed-advisories'
  /** Runs a delivery again whose task stream already ends with its task.result (TAP-NATS-035). */
  | 'runs-again'
  /**
   * Takes whatever is queued as a record and looks it up as it is: a task_id of ">" reads another
   * task's stream and result, and what is not an object stays on the queue (TAP-NATS-037).
   */
  | 'no-record-check'
  /** Holds a trust file but runs records without checking their signatures (TAP-NATS-038). */
  | 'no-signature-check'
  /** Checks records' signatures but takes any stored task.result as the outcome, whoever stored it (TAP-NATS-039). */
  | 'trusts-stored-results'
  /** Leaves the trace_id and span_id of the record's metadata off the task's stream (TAP-NATS-051). */
  | 'no-trace'
  /** Creates TAP_IDEMPOTENCY with a max_age of an hour, so a key ages out (TAP-NATS-052). */
  | 'idempotency-expires'
  /** Consumes each capability through a consumer of its own naming, not tap-<capability> (TAP-NATS-053). */
  | 'other-consumer-name'
  /** Finishes a record with state.attempts 0, as the workspace binding's transition does (TAP-NATS-054). */
  | 'attempts-reset'
  /** Stores the task_id in TAP_IDEMPOTENCY as a JSON string, quotes and all (TAP-NATS-024). */
  | 'json-idempotency-value'
  /** Runs a record whatever its requirements.target_agent names (TAP-NATS-055). */
  | 'runs-any-target'
  /** Publishes a dead letter with the message id <task_id>:dead, the same for every queue message of a task (TAP-NATS-056). */
  | 'dead-msg-id'
  /** Begins a task's stream with a task.accepted, as a session's task does (TAP-NATS-057). */
  | 'accepted-first'
  /** Takes a duplicate acknowledgement of its publish to the task's stream as its own and goes on (TAP-NATS-036). */
  | 'no-fence'
  /** Acknowledges a delivery first and publishes its finished record right after (TAP-NATS-020). */
  | 'ack-then-publish'
  /** Gives each delivery an effects record of its own: a redelivered task makes again the effects its first delivery completed (TAP-NATS-025). */
  | 'fresh-effects'
  /** Ignores the hold_ms of tap.test.counter in a record of 1.1: it completes right after its increment (TAP-CONF-121). */
  | 'no-hold'
  /** Runs two deliveries at a time while its client keeps a buffer of four filled: the two that wait are not renewed (TAP-NATS-072). */
  | 'prefetching'
  /**
   * Runs two deliveries at a time, pulling one only for a free place, except that once both places
   * have been busy 1.2 s it takes two more ahead of a place and holds them unrenewed until one frees.
   * They wait about 1.7 s of a lease of 2 s, so the break of TAP-NATS-072 shows only when load
   * delays the places: a run cannot always tell it from a runner that renews, and must never pass it.
   */
  | 'late-prefetching'
  /**
   * Breaks no rule: runs the first record with a hold_ms alone, taking the next delivery only once
   * it has finished, and every later one at once, as a runner slow to begin a task once might.
   */
  | 'slow-once'
  /**
   * Breaks no rule: runs one record of each queue at a time, as a durable runner may, pulling the
   * next only once the last is done. The redelivered-effect case, which needs a second record to
   * finish while the first holds, is SKIPPED with that reason instead of failing it.
   */
  | 'one-at-a-time'
  /** Breaks only tap.test.sleep's wait, which ends at once: what a harness too slow to plant a message before a task's end sees. */
  | 'brief-sleep';

/** Signed mode: the trust file the runner holds and its agent's key (spec: bindings-nats#signed-records). */
export interface BrokenSigning {
  trust: TrustFile;
  signingKey: SigningKey;
}

const nanos = (ms: number): number => ms * 1_000_000;

/** The hold_ms of a delivered record's input, if it has one. */
function holdMsOf(m: JsMsg): unknown {
  try {
    const input = m.json<TaskRecord>().context.current_input;
    return typeof input === 'object' && input !== null ? (input as { hold_ms?: unknown }).hold_ms : undefined;
  } catch {
    return undefined;
  }
}

/** A record whose input has no hold_ms. */
function without(record: TaskRecord, member: string): TaskRecord {
  const input = record.context.current_input;
  if (typeof input !== 'object' || input === null || !(member in input)) return record;
  const { [member]: _, ...rest } = input as Record<string, unknown>;
  return { ...record, context: { ...record.context, current_input: rest } };
}

/** Serves every conformance capability's queue with `fault`; resolves with the stop function. */
async function brokenRunner(
  nc: NatsConnection,
  agentId: string,
  fault: DurableFault,
  leaseMs: number,
  maxDeliver: number,
  signing?: BrokenSigning,
): Promise<() => Promise<void>> {
  const ensured = await ensureStreams(nc);
  const jsm = ensured.jsm;
  let idempotency = ensured.idempotency;
  if (fault === 'idempotency-expires') {
    await jsm.streams.delete(`KV_${N.idempotency}`);
    idempotency = await new Kvm(nc).create(N.idempotency, { ttl: 3_600_000 });
  }
  const js = jetstream(nc);
  const closers: Array<() => Promise<void>> = [];
  const running = new Set<Promise<void>>();
  const effects = new EffectsRecords();
  for (const [capability, handler] of Object.entries(durableConformanceHandlers())) {
    const durable = fault === 'other-consumer-name' ? `runner-${capability.replace(/\./g, '-')}` : consumerName(capability);
    await jsm.consumers.add(N.tasks, {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: nanos(leaseMs),
      max_deliver: maxDeliver,
      filter_subject: taskSubject(N, capability),
    });
    // The fault of no-record-check: subjects written from the record's values as they are.
    const raw = (kind: string, id: string): string => [N.prefix, kind, id].join('.');
    const lastOf = async (taskId: string): Promise<StoredStreamMessage | null> => {
      if (fault !== 'no-record-check') return lastStoredMessage(jsm, N, taskId);
      const m = await jsm.streams.getMessage(N.events, { last_by_subj: raw('events', taskId) });
      return m ? { message: m.json(), attempt: Number(m.header?.get('Tap-Attempt') || Number.NaN) || 0, streamSeq: m.seq } : null;
    };
    const intakeOptions = { capability, ...(signing && fault !== 'no-signature-check' ? { trust: signing.trust } : {}) };
    const work = async (m: JsMsg): Promise<void> => {
      let record: TaskRecord;
      if (fault === 'no-record-check') record = m.json<TaskRecord>();
      else {
        const intake = takeIn(m.data, intakeOptions);
        if (!intake.ok) {
          const letter = refusedLetter(m.data, intake, m.seq, m.info.deliveryCount, agentId);
          const msgID = fault === 'dead-msg-id' ? `${letter.task_id}:dead` : `${letter.task_id}:dead:${m.seq}`;
          await js.publish(deadSubject(N, capability), JSON.stringify(letter), { msgID });
          return void (await m.ackAck());
        }
        record = intake.record;
      }
      const target = record.requirements?.target_agent;
      if (fault !== 'runs-any-target' && target && target !== agentId) return m.nak(100);
      const attempts = fault === 'attempt-zero' ? 0 : m.info.deliveryCount - 1;
      const idem = (record.metadata as { 'x-idempotency'?: { principal: string; key: string } })['x-idempotency'];
      if (idem && fault !== 'no-idempotency') {
        const key = idempotencyKey(idem.principal, capability, idem.key);
        const json = fault === 'json-idempotency-value';
        const owner = await idempotency.create(key, json ? JSON.stringify(record.task_id) : record.task_id).then(
          () => record.task_id,
          async () => {
            const held = (await idempotency.get(key))?.string();
            return json && held ? JSON.parse(held) : held;
          },
        );
        if (owner !== record.task_id) return void (await m.ackAck());
      }
      const last = await lastOf(record.task_id);
      const trusted =
        !signing ||
        fault === 'trusts-stored-results' ||
        (last !== null && verifyStreamMessage(last.message, last.attempt, last.signature, signing.trust, [agentId]));
      let result: { status?: unknown; output?: unknown; error?: unknown };
      let ran = attempts;
      if (last?.message.type === 'task.result' && trusted && fault !== 'runs-again') {
        result = last.message.payload;
        ran = last.attempt ?? attempts;
      } else {
        const stream = new TaskStreamWriter(
          js,
          N,
          agentId,
          record.task_id,
          last?.message.sequence ?? 0,
          attempts,
          signing?.signingKey,
          fault === 'no-trace' ? undefined : traceOfRecord(record.metadata),
        );
        if (fault === 'accepted-first' && stream.nextSequence === 1)
          await stream.publish('task.accepted' as 'task.event', { status: 'accepted' });
        await stream.publish('task.event', { kind: 'state', state: 'running' });
        const renew = fault === 'no-renewal' ? undefined : setInterval(() => m.working(), Math.floor(leaseMs / 3));
        let output: unknown;
        let error: TapError | undefined;
        try {
          // The faults of no-hold and brief-sleep: the record's input without its hold_ms, or without its ms.
          const given = fault === 'no-hold' ? without(record, 'hold_ms') : fault === 'brief-sleep' ? without(record, 'ms') : record;
          output = await handler({
            record: { ...given, state: { ...record.state, attempts } },
            attempts,
            signal: new AbortController().signal,
            emit: async (data) => void (await stream.publish('task.event', { kind: 'output', data })),
            // The fault of fresh-effects: each delivery has a record of its own, under its delivery count.
            effect: (name, fn) =>
              effects.once(fault === 'fresh-effects' ? `${record.task_id}#${m.info.deliveryCount}` : record.task_id, name, fn),
          });
        } catch (err) {
          error = err as TapError;
        } finally {
          clearInterval(renew);
        }
        if (error?.payload?.retryable) return m.nak();
        result = error ? { status: 'failed', error: error.payload } : { status: 'completed', output };
        await stream.publish('task.result', result).catch((err: Error) => {
          if (!(fault === 'no-fence' && err instanceof StreamFenced)) throw err;
        });
      }
      const status = result.status === 'completed' ? 'completed' : 'failed';
      const done = structuredClone(record);
      done.context.history.push({
        agent: agentId,
        phase: capability,
        timestamp: new Date().toISOString(),
        input: record.context.current_input,
        output: status === 'completed' ? (result.output ?? null) : null,
        artifacts: [],
      });
      Object.assign(done, { current_phase: capability, next_phase: null });
      Object.assign(done.state, { attempts: fault === 'attempts-reset' ? 0 : ran, processed_by: agentId, status });
      const finishedSubject = fault === 'no-record-check' ? raw('results', record.task_id) : resultSubject(N, record.task_id);
      if (fault === 'ack-then-publish') await m.ackAck().catch(() => false);
      await js.publish(finishedSubject, JSON.stringify(done), { msgID: `${record.task_id}:result` });
      if (fault !== 'ack-then-publish') await m.ackAck().catch(() => false);
    };
    const consumer = await js.consumers.get(N.tasks, durable);
    /** Runs a delivery in a place; what it holds shows in `running` until it ends. */
    const begin = (m: JsMsg): Promise<void> => {
      const p = work(m).catch(() => {});
      running.add(p);
      void p.finally(() => running.delete(p));
      return p;
    };
    if (fault === 'one-at-a-time') {
      // One delivery pulled at a time, and the next only once it is done: nothing waits unrenewed.
      repeatUntilClosed(closers, async () => {
        const m = await consumer.next({ expires: 1000 }).catch(() => null);
        if (m) await work(m).catch(() => {});
      });
    } else if (fault === 'late-prefetching') {
      /** Since when both places have been busy. */
      let fullSince: number | undefined;
      const held: JsMsg[] = [];
      repeatUntilClosed(closers, async () => {
        if (running.size >= 2) {
          fullSince ??= Date.now();
          if (held.length === 0 && Date.now() - fullSince >= 1200) {
            try {
              for await (const m of await consumer.fetch({ max_messages: 2, expires: 1000 })) held.push(m);
            } catch {
              // The connection closed at the end of a run: the loop ends with it.
            }
            fullSince = Date.now();
          }
          await Promise.race([...running, sleep(100)]);
          return;
        }
        fullSince = undefined;
        const m = held.shift() ?? (await consumer.next({ expires: 1000 }).catch(() => null));
        if (m) begin(m);
        else await sleep(50);
      });
    } else {
      // The client keeps a buffer of four deliveries filled; the fault of prefetching runs two at a
      // time, so the others wait in the buffer with nobody renewing them.
      const places = fault === 'prefetching' ? 2 : Number.POSITIVE_INFINITY;
      const messages = await consumer.consume({ max_messages: 4, expires: 1000 });
      // The fault of slow-once: the first record with a hold_ms is run alone, the next taken only after it.
      let slowOnce = fault === 'slow-once';
      void (async () => {
        for await (const m of messages) {
          while (running.size >= places) await Promise.race(running);
          const p = begin(m);
          if (slowOnce && holdMsOf(m) !== undefined) {
            slowOnce = false;
            await p;
          }
        }
      })();
      closers.push(async () => void (await messages.close()));
    }
    if (fault === 'no-dead-letters') continue;
    /** Moves the record an advisory names to TAP_DEAD, then off the queue. */
    const answer = async (advisory: Uint8Array): Promise<void> => {
      const { stream_seq: seq, deliveries } = JSON.parse(new TextDecoder().decode(advisory)) as { stream_seq: number; deliveries: number };
      const stored = await jsm.streams.getMessage(N.tasks, { seq }).catch(() => null);
      if (!stored) return;
      const record = stored.json<TaskRecord>();
      record.state.attempts = deliveries;
      record.state.status = 'failed';
      record.state.last_error = {
        code: 'MAX_ATTEMPTS',
        message: `delivered ${deliveries} times without finishing`,
        at: new Date().toISOString(),
      };
      const msgID = fault === 'dead-msg-id' ? `${record.task_id}:dead` : `${record.task_id}:dead:${seq}`;
      await js.publish(deadSubject(N, capability), JSON.stringify(record), { msgID });
      await jsm.streams.deleteMessage(N.tasks, seq);
    };
    const subject = maxDeliveriesAdvisory(N.tasks, durable);
    if (fault === 'subscribed-advisories') {
      const advisory = nc.subscribe(subject, { callback: (err, msg) => void (err ? undefined : answer(msg.data).catch(() => {})) });
      closers.push(async () => advisory.unsubscribe());
      continue;
    }
    await jsm.consumers.add(N.advisories, { durable_name: durable, ack_policy: AckPolicy.Explicit, filter_subject: subject });
    const advisories = await (await js.consumers.get(N.advisories, durable)).consume({ max_messages: 4, expires: 1000 });
    void (async () => {
      for await (const m of advisories)
        await answer(m.data).then(
          () => m.ack(),
          () => m.nak(),
        );
    })();
    closers.push(async () => void (await advisories.close()));
  }
  return async () => {
    for (const c of closers) await c();
    await Promise.all(running);
  };
}

/** Starts a broken durable agent `agentId` on the NATS server at `url`; resolves with its stop function. */
export async function startBrokenDurableAgent(
  url: string,
  agentId: string,
  fault: DurableFault,
  o: { leaseMs: number; maxDeliver: number; signing?: BrokenSigning },
): Promise<() => Promise<void>> {
  const agent = createAgent({
    card: {
      agent_id: agentId,
      name: `broken durable (${fault})`,
      description: `The reference runtime with a durable queue that breaks one rule: ${fault}.`,
      capabilities: [],
      limits: { max_concurrent_tasks: 16, max_task_seconds: 60, max_message_bytes: 1048576 },
    },
    capabilities: withConformanceCapabilities(),
    shutdownGraceMs: 1000,
    logger: () => {},
  });
  const listener = await agent.listenNats({ url });
  const nc = await connect({ servers: url });
  const stopRunner = await brokenRunner(nc, agentId, fault, o.leaseMs, o.maxDeliver, o.signing);
  return async () => {
    await stopRunner();
    await nc.close();
    await listener.close?.();
    await agent.shutdown();
  };
}

/** Calls `step` again and again until the runner closes; closing waits for the step under way. */
function repeatUntilClosed(closers: Array<() => Promise<void>>, step: () => Promise<void>): void {
  let closed = false;
  const loop = (async () => {
    while (!closed) await step();
  })();
  closers.push(async () => {
    closed = true;
    await loop;
  });
}
