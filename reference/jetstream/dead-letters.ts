/**
 * Dead letters of a capability's queue (spec: bindings-nats#dead-letters): a record that ran out of
 * deliveries (TAP-NATS-021, from the server's max-deliveries advisory, which TAP_ADVISORIES keeps
 * until a runner answers it, TAP-NATS-071) and a queue message that is
 * not a record this runner may run (TAP-NATS-037, TAP-NATS-038), each published to
 * `<prefix>.dead.<capability>` in TAP_DEAD with its reason before it leaves TAP_TASKS.
 */
import type { JetStreamClient, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import { AckPolicy, DeliverPolicy } from '../transports/nats/client.ts';
import { maxDeliveriesAdvisory } from '../transports/nats/subjects.ts';
import { rejectedRecord, type TaskRecord } from '../workspace/record.ts';
import { sayWhenDeleted } from './consumer.ts';
import { takeIn, type Intake, type IntakeOptions } from './intake.ts';
import { deadSubject, taskSubject, type DurableNames } from './names.ts';

/** Where a runner's dead letters go, and what it needs to move them. */
export interface DeadLetterBox {
  js: JetStreamClient;
  jsm: JetStreamManager;
  names: DurableNames;
  agentId: string;
  intake: IntakeOptions;
}

/**
 * The dead letter of a queue message the runner refuses: the record itself, failed with the
 * problem's code, when it is a task record; otherwise a record that stands for it (task id
 * `rejected-tasks-<seq>`, an excerpt of the bytes in `metadata["x-rejected-record"]`).
 */
export function refusedLetter(
  bytes: Uint8Array,
  refused: Extract<Intake, { ok: false }>,
  seq: number,
  deliveries: number,
  agentId: string,
): TaskRecord {
  const { problem, record } = refused;
  if (!record) {
    const letter = rejectedRecord(`rejected-tasks-${seq}`, 0, bytes, problem, agentId);
    letter.state.attempts = deliveries;
    return letter;
  }
  const letter = structuredClone(record);
  letter.state.attempts = deliveries;
  letter.state.status = 'failed';
  letter.state.processed_by = agentId;
  letter.state.last_error = { code: problem.code, message: problem.message.slice(0, 8192), at: new Date().toISOString() };
  return letter;
}

/** Publishes a dead letter for the queue message at `seq`; one message id per queue message. */
export async function publishDeadLetter(box: DeadLetterBox, letter: TaskRecord, seq: number): Promise<void> {
  await box.js.publish(deadSubject(box.names, box.intake.capability), JSON.stringify(letter), { msgID: `${letter.task_id}:dead:${seq}` });
}

/** A record that ran out of deliveries: failed with MAX_ATTEMPTS and the deliveries it had (TAP-NATS-021, TAP-NATS-029). */
function exhausted(record: TaskRecord, deliveries: number): TaskRecord {
  const letter = structuredClone(record);
  letter.state.attempts = deliveries;
  letter.state.status = 'failed';
  letter.state.last_error = {
    code: 'MAX_ATTEMPTS',
    message: `the phase was delivered ${deliveries} times without finishing`,
    at: new Date().toISOString(),
  };
  return letter;
}

/** What answers a capability's max-deliveries advisories; `stop` ends its pulls. */
export interface AdvisoryAnswerer {
  stop(): Promise<void>;
}

/** How long a runner holds an advisory it pulled before the server gives it to another (it answers one in moments). */
const ADVISORY_LEASE_MS = 5_000;
/** How long an advisory whose answer failed waits before the server delivers it again. */
const ADVISORY_RETRY_MS = 2_000;

/**
 * Answers the server's max-deliveries advisories of the capability's consumer, which TAP_ADVISORIES
 * keeps from the moment the server publishes one, whether a runner was connected then or not
 * (TAP-NATS-071): they are pulled through the durable consumer of TAP_ADVISORIES named as the
 * queue's, whose one filter is that consumer's advisory subject. The message an advisory names, if
 * it is still on this capability's queue, goes to TAP_DEAD (checked as a delivery is: a message that
 * is not a record this runner may run keeps its own reason), then is deleted from TAP_TASKS; only
 * then is the advisory acknowledged, so that one whose answer failed comes again. An advisory that is
 * not JSON, names no sequence or names a message of another queue is logged, changes nothing and is
 * acknowledged.
 */
export async function answerMaxDeliveries(
  box: DeadLetterBox,
  consumer: string,
  o: { onMoved: () => void; log: (level: 'info' | 'warn' | 'error', message: string) => void; pullExpiresMs?: number },
): Promise<AdvisoryAnswerer> {
  const queue = taskSubject(box.names, box.intake.capability);
  const subject = maxDeliveriesAdvisory(box.names.tasks, consumer);
  const stream = box.names.advisories;
  const move = async (seq: number, deliveries: number): Promise<void> => {
    const stored = await box.jsm.streams.getMessage(box.names.tasks, { seq }).catch(() => null);
    if (!stored) return;
    if (stored.subject !== queue) {
      o.log(
        'warn',
        `a max-deliveries advisory of ${consumer} named ${box.names.tasks} sequence ${seq}, which is on ${stored.subject}, not ${queue}; ignored`,
      );
      return;
    }
    const intake = takeIn(stored.data, box.intake);
    const letter = intake.ok ? exhausted(intake.record, deliveries) : refusedLetter(stored.data, intake, seq, deliveries, box.agentId);
    await publishDeadLetter(box, letter, seq);
    await box.jsm.streams.deleteMessage(box.names.tasks, seq);
    o.onMoved();
  };
  const answer = async (m: JsMsg): Promise<void> => {
    let advisory: { stream_seq?: unknown; deliveries?: unknown } | null = null;
    try {
      advisory = m.json();
    } catch {
      // Not JSON: said below.
    }
    const seq = advisory?.stream_seq;
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1) {
      o.log('warn', `a message on ${m.subject} in ${stream} is not a max-deliveries advisory (no stream_seq); acknowledged and ignored`);
      m.ack();
      return;
    }
    const deliveries = Number.isSafeInteger(advisory?.deliveries) ? (advisory!.deliveries as number) : 0;
    try {
      await move(seq, deliveries);
      m.ack();
    } catch (e) {
      o.log(
        'error',
        `could not move the dead letter at ${box.names.tasks} sequence ${seq}: ${(e as Error).message}; its advisory comes again in ${ADVISORY_RETRY_MS} ms`,
      );
      m.nak(ADVISORY_RETRY_MS);
    }
  };
  // One consumer per consumer of the queue, each with its own advisory subject: a work queue's filters never overlap.
  if (!(await box.jsm.consumers.info(stream, consumer).catch(() => null))) {
    try {
      await box.jsm.consumers.add(stream, {
        durable_name: consumer,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ack_wait: ADVISORY_LEASE_MS * 1_000_000,
        filter_subject: subject,
      });
    } catch (err) {
      throw new Error(`cannot create consumer ${consumer} of ${stream} for ${subject}: ${(err as Error).message}`, { cause: err });
    }
  }
  const messages = await (await box.js.consumers.get(stream, consumer)).consume({
    max_messages: 16,
    expires: Math.max(1000, o.pullExpiresMs ?? 5000),
  });
  sayWhenDeleted(messages, `consumer ${consumer} of ${stream}`, o.log);
  const loop = (async () => {
    for await (const m of messages) await answer(m);
  })().catch((err: Error) => o.log('error', `stopped taking the advisories of ${consumer} from ${stream}: ${err.message}`));
  return {
    async stop() {
      await messages.close();
      await loop;
    },
  };
}
