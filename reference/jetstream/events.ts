/**
 * A durable task's stream in TAP_EVENTS (spec: bindings-nats#event-streams): the runner publishes
 * each task.event and the task.result there, numbered per task, before anything else sees them;
 * a requester that lost its session resumes by reading the subject from `last_sequence`.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import { headers as natsHeaders, DeliverPolicy, jetstream } from '../transports/nats/client.ts';
import type { Envelope } from '../../schemas/src/index.ts';
import { newMessageId, pooled, webRandom } from '../core/ids.ts';
import type { SigningKey, TrustFile } from '../trust.ts';
import { signStreamMessage, STREAM_SIGNATURE_HEADER, verifyStreamMessage } from './signatures.ts';
import { DEFAULT_NAMES, eventSubject, type DurableNames } from './streams.ts';

/** The random bytes of the stream messages' ids, drawn from the platform CSPRNG 4 KiB at a time. */
const idBytes = pooled(webRandom);

/** The NATS header that names the attempt (`state.attempts`) a stream message was published in. */
export const ATTEMPT_HEADER = 'Tap-Attempt';

/** A message of a durable task's stream: a TAP task.event or task.result without a session (the envelope of schemas/src/envelope.ts). */
export type DurableStreamMessage = Envelope & { type: 'task.event' | 'task.result'; task_id: string; sequence: number };

/** A stored message with the attempt it was published in, its stream sequence and its runner's signature. */
export interface StoredStreamMessage {
  message: DurableStreamMessage;
  attempt: number | undefined;
  streamSeq: number;
  /** The `Tap-Signature` header, when the runner that published it signs (spec: bindings-nats#signed-records). */
  signature?: string;
}

/** A stored message's body and headers as a StoredStreamMessage; a body that is not a JSON object reads as an empty one. */
function storedMessage(body: () => unknown, header: { get(name: string): string } | undefined, streamSeq: number): StoredStreamMessage {
  let message: unknown;
  try {
    message = body();
  } catch {
    message = undefined;
  }
  const attempt = Number(header?.get(ATTEMPT_HEADER) || Number.NaN);
  const signature = header?.get(STREAM_SIGNATURE_HEADER) || undefined;
  return {
    message: (typeof message === 'object' && message !== null && !Array.isArray(message) ? message : {}) as DurableStreamMessage,
    attempt: Number.isInteger(attempt) ? attempt : undefined,
    streamSeq,
    ...(signature ? { signature } : {}),
  };
}

/** The `Nats-Msg-Id` of a stream message: `<task_id>:<sequence>` (spec: bindings-nats#event-streams). */
export const eventMsgId = (taskId: string, sequence: number): string => `${taskId}:${sequence}`;

/** The last message stored for a task, null when none (spec: bindings-nats#event-streams). */
export async function lastStoredMessage(jsm: JetStreamManager, names: DurableNames, taskId: string): Promise<StoredStreamMessage | null> {
  // getMessage resolves null when the subject has no message; any other failure is thrown, never read as none.
  const stored = await jsm.streams.getMessage(names.events, { last_by_subj: eventSubject(names, taskId) });
  if (!stored) return null;
  return storedMessage(() => stored.json(), stored.header, stored.seq);
}

/** The highest TAP sequence stored for a task, 0 when none (spec: bindings-nats#event-streams). */
export async function lastStoredSequence(jsm: JetStreamManager, names: DurableNames, taskId: string): Promise<number> {
  const seq = ((await lastStoredMessage(jsm, names, taskId))?.message as { sequence?: unknown } | undefined)?.sequence;
  return typeof seq === 'number' ? seq : 0;
}

/**
 * Thrown by `TaskStreamWriter.publish` when the server acknowledges the message as a duplicate
 * of one this writer did not publish: another delivery of the same record has stored that
 * sequence, so two deliveries run at once (a lease ran out) and this one must stop
 * (spec: bindings-nats#event-streams, TAP-NATS-036).
 */
export class StreamFenced extends Error {
  override readonly name = 'StreamFenced';
}

/** The trace members of a durable task's stream messages: none, or those of its record's metadata. */
export interface StreamTrace {
  trace_id?: string;
  span_id?: string;
}

const TRACE_MEMBER = /^[^\u0000-\u001f\u007f-\u009f\u2028\u2029]{1,128}$/u;

/**
 * The trace a durable task's stream carries: the `trace_id` and `span_id` of its record's
 * metadata, each when it is a one-line string of 1 to 128 characters (spec: bindings-nats#event-streams, TAP-NATS-051).
 */
export function traceOfRecord(metadata: Record<string, unknown> | undefined): StreamTrace | undefined {
  const trace: StreamTrace = {};
  for (const k of ['trace_id', 'span_id'] as const) {
    const v = metadata?.[k];
    if (typeof v === 'string' && TRACE_MEMBER.test(v)) trace[k] = v;
  }
  return Object.keys(trace).length > 0 ? trace : undefined;
}

/** The condition of a first message: the subject holds no message yet (a JetStream publish header). */
const EXPECT_EMPTY = ['Nats-Expected-Last-Subject-Sequence', '0'] as const;
/** JetStream's error code for a publish whose expected last sequence is not the stream's. */
const WRONG_LAST_SEQUENCE = 10071;

/** Publishes a task's messages in order, each acknowledged by the server before the next (spec: bindings-nats#event-streams). */
export class TaskStreamWriter {
  private next: number;

  constructor(
    private readonly js: JetStreamClient,
    private readonly names: DurableNames,
    private readonly agentId: string,
    private readonly taskId: string,
    /** The last sequence already stored for the task: a redelivery numbers on from it. */
    lastSequence: number,
    private readonly attempt: number,
    /** The runner's key: each message then carries its `Tap-Signature` (spec: bindings-nats#signed-records). */
    private readonly signingKey?: SigningKey,
    /** The trace of the task's record, carried in every message's metadata (TAP-NATS-051). */
    private readonly trace?: StreamTrace,
    /** The version of the task's record, its messages' `protocol` (spec: bindings-nats#durable-1-1). */
    private readonly protocol: 'tap/1.0' | 'tap/1.1' = 'tap/1.0',
  ) {
    this.next = lastSequence + 1;
  }

  /** The sequence the next message gets. */
  get nextSequence(): number {
    return this.next;
  }

  /** Publishes one message and resolves with it once the server has stored it. */
  async publish(type: DurableStreamMessage['type'], payload: Record<string, unknown>): Promise<DurableStreamMessage> {
    const { message, ack } = await this.store(type, payload);
    // spec: bindings-nats#event-streams: a duplicate is this writer's own message only if the stored one is it.
    if (ack.duplicate && !(await this.stored(ack.seq, message.message_id)))
      throw new StreamFenced(`task ${this.taskId}: sequence ${this.next} of its stream was stored by another delivery`);
    this.next++;
    return message;
  }

  /**
   * Publishes the first message of a task's stream, on the condition that the stream holds none
   * (`Nats-Expected-Last-Subject-Sequence: 0`): resolves with the message once the server stored
   * it, or with null, storing nothing, when the task's stream already holds a message (the server
   * refuses the condition, or knows the message id) — the caller then reads the stream and goes
   * on from what it holds. A first delivery learns this way, in the one request it makes anyway,
   * that its stream is empty (spec: bindings-nats#event-streams).
   */
  async publishFirst(type: DurableStreamMessage['type'], payload: Record<string, unknown>): Promise<DurableStreamMessage | null> {
    if (this.next !== 1) throw new Error(`publishFirst is for the first message of a stream, not sequence ${this.next}`);
    let stored: Awaited<ReturnType<TaskStreamWriter['store']>>;
    try {
      stored = await this.store(type, payload, EXPECT_EMPTY);
    } catch (err) {
      if ((err as { code?: unknown }).code === WRONG_LAST_SEQUENCE) return null;
      throw err;
    }
    if (stored.ack.duplicate) return null;
    this.next++;
    return stored.message;
  }

  /** Stores one message under the next sequence, with `extra` headers; the server's acknowledgement. */
  private async store(type: DurableStreamMessage['type'], payload: Record<string, unknown>, extra?: readonly [string, string]) {
    const message: DurableStreamMessage = {
      protocol: this.protocol,
      message_id: newMessageId(idBytes),
      type,
      source: this.agentId,
      target: '*',
      timestamp: new Date().toISOString(),
      task_id: this.taskId,
      sequence: this.next,
      ...(this.trace ? { metadata: { ...this.trace } } : {}),
      payload,
    };
    const h = natsHeaders();
    h.set(ATTEMPT_HEADER, String(this.attempt));
    if (extra) h.set(extra[0], extra[1]);
    if (this.signingKey) h.set(STREAM_SIGNATURE_HEADER, signStreamMessage(message, this.attempt, this.signingKey));
    const ack = await this.js.publish(eventSubject(this.names, this.taskId), JSON.stringify(message), {
      msgID: eventMsgId(this.taskId, this.next),
      headers: h,
    });
    return { message, ack };
  }

  /** Whether the message stored at a stream sequence of TAP_EVENTS is the one with this message id. */
  private async stored(streamSeq: number, messageId: string): Promise<boolean> {
    const jsm = await this.js.jetstreamManager(false);
    const stored = await jsm.streams.getMessage(this.names.events, { seq: streamSeq });
    return stored?.json<DurableStreamMessage>().message_id === messageId;
  }
}

/** Options of `replayDurableTask`. */
export interface ReplayOptions {
  names?: DurableNames;
  taskId: string;
  /** The last sequence the requester has (0 for none): only later messages are returned. */
  lastSequence?: number;
  /** Waits for the task.result when it is not stored yet (default true). */
  untilResult?: boolean;
  /** How long to wait for the task.result, in ms (default 30 000). */
  timeoutMs?: number;
  /**
   * Only messages signed by one of `runners` by the trust file are returned: a message anyone else
   * stored is left out (spec: bindings-nats#signed-records).
   */
  signedBy?: { trust: TrustFile; runners: readonly string[] };
}

/**
 * The task.resume of a durable task (spec: bindings-nats#event-streams): the stored messages of
 * the task whose sequence is above `lastSequence`, in order, ending with the task.result unless
 * the wait ran out. Each comes with the attempt it was published in.
 */
export async function replayDurableTask(nc: NatsConnection, o: ReplayOptions): Promise<StoredStreamMessage[]> {
  const names = o.names ?? DEFAULT_NAMES;
  const after = o.lastSequence ?? 0;
  const untilResult = o.untilResult ?? true;
  const js = jetstream(nc);
  const consumer = await js.consumers.get(names.events, {
    filter_subjects: eventSubject(names, o.taskId),
    deliver_policy: DeliverPolicy.All,
  });
  const out: StoredStreamMessage[] = [];
  const messages = await consumer.consume({ max_messages: 256 });
  const timer = setTimeout(() => void messages.close(), o.timeoutMs ?? 30_000);
  let idle: ReturnType<typeof setTimeout> | undefined;
  // Without waiting for the result, the replay ends when the stored messages are read.
  if (!untilResult) idle = setTimeout(() => void messages.close(), 500);
  try {
    for await (const m of messages) {
      const stored = storedMessage(() => m.json(), m.headers, m.seq);
      const { message } = stored;
      const trusted = !o.signedBy || verifyStreamMessage(message, stored.attempt, stored.signature, o.signedBy.trust, o.signedBy.runners);
      if (trusted && message.sequence > after) out.push(stored);
      if (trusted && message.type === 'task.result') break;
      if (!untilResult && m.info.pending === 0) break;
      if (idle) {
        clearTimeout(idle);
        idle = setTimeout(() => void messages.close(), 500);
      }
    }
  } finally {
    clearTimeout(timer);
    if (idle) clearTimeout(idle);
    await messages.close();
    // The replay's ordered consumer would stay on the server for its inactive threshold (5 minutes).
    await consumer.delete().catch(() => false);
  }
  return out;
}
