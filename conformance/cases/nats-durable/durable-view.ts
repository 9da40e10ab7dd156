/**
 * The harness's own JetStream view of the server a nats://host:port/<agent_id> target names, for
 * the nats-durable profile (spec: bindings-nats#certification): it publishes records to the
 * capability queues and reads TAP_EVENTS, TAP_RESULTS, TAP_DEAD and TAP_IDEMPOTENCY; it consumes
 * nothing the agent consumes.
 */
import { createHash } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import { DEFAULT_NAMES as S, deadSubject, eventSubject, resultSubject, taskSubject } from '../../../reference/jetstream/names.ts';
import { RECORD_SIGNATURE, signRecord } from '../../../reference/jetstream/signatures.ts';
import type { SigningKey } from '../../../reference/trust.ts';
import {
  connect,
  DeliverPolicy,
  headers,
  jetstream,
  jetstreamManager,
  Kvm,
  missingNatsClient,
  natsClientInstalled,
} from '../../../reference/transports/nats/client.ts';
import { natsClientOptions, parseNatsUrl } from '../../../reference/transports/nats/url.ts';
import { recordFromDraft, type TaskRecord } from '../../../reference/workspace/record.ts';
import type { CaseContext } from '../../context.ts';
import { pollUntil } from '../../stall-aware.ts';
import { fail } from '../../verdict.ts';
import { Stop } from '../kit.ts';
import { leftoversOf, type DurableLeftovers } from './durable-leftovers.ts';

/** How long a read of a task's stream may take to deliver the messages stored when it began. */
const STORED_READ_MS = 15_000;

/** The NATS client (an optional peer): its MissingPeerError names the npm command when it is absent. */
export const natsLibraries = async () => {
  if (!natsClientInstalled()) throw missingNatsClient('the nats-durable profile');
  return { connect, headers, jetstream, jetstreamManager, DeliverAll: DeliverPolicy.All, Kvm };
};
export type NatsLibraries = Awaited<ReturnType<typeof natsLibraries>>;

/** The target's URL and agent id. */
export function targetOf(ctx: CaseContext): { url: string; agentId: string } {
  const url = (ctx.env.target as { url: string }).url;
  return { url, agentId: parseNatsUrl(url).agentId! };
}

/** Connects to the server the target URL names, with its credentials. */
export function connectTarget(ctx: CaseContext, lib: NatsLibraries): Promise<NatsConnection> {
  const address = parseNatsUrl(targetOf(ctx).url);
  return lib.connect(natsClientOptions(address, ctx.env.target.kind === 'nats' ? ctx.env.target.tls : undefined));
}

/** A capability's queue that the agent under test serves, as its consumer configures it. */
export interface Queue {
  capability: string;
  /** The consumer of TAP_TASKS that takes the capability's subject. */
  consumer: string;
  /** The lease: the consumer's ack_wait (spec: bindings-nats#task-queue). */
  ackWaitMs: number;
  maxDeliver: number;
}

/** A message of a task's stream in TAP_EVENTS with the headers the binding gives it. */
export interface Entry {
  // biome-ignore lint/suspicious/noExplicitAny: a TAP message of either type, read by field
  message: Record<string, any>;
  attempt: string | undefined;
  msgId: string | undefined;
  /** Its sequence in TAP_EVENTS: the order in which the server stored the messages of every task. */
  streamSeq: number;
}

/** The harness's own JetStream view of the server the target URL names. */
export class DurableView {
  /** Where the run notes what it publishes, removed once its cases end (durable-leftovers.ts). */
  private leftovers?: DurableLeftovers;

  private constructor(
    readonly lib: NatsLibraries,
    readonly nc: NatsConnection,
    readonly js: JetStreamClient,
    readonly jsm: JetStreamManager,
    readonly agentId: string,
    /** The run's key in the agent's trust file (--signing-key): every record the view publishes is signed with it. */
    readonly signingKey?: SigningKey,
  ) {}

  /** The principal of the view's idempotency keys: the signer's, or the harness's own id. */
  get principal(): string {
    return this.signingKey?.principal ?? 'tap-conform';
  }

  /** Connects; rejects with the reason when the server has no JetStream the harness can reach. */
  static async open(ctx: CaseContext): Promise<DurableView> {
    const lib = await natsLibraries();
    const nc = await connectTarget(ctx, lib);
    try {
      const jsm = await lib.jetstreamManager(nc, { timeout: ctx.scaled(5000) });
      const view = new DurableView(lib, nc, lib.jetstream(nc), jsm, targetOf(ctx).agentId, ctx.env.signingKey);
      view.leftovers = leftoversOf(ctx, () => DurableView.open(ctx));
      await view.leftovers.begin(() => view.deadMark());
      return view;
    } catch (err) {
      await nc.close();
      throw err;
    }
  }

  /**
   * Publishes a record for `capability`, signed with the run's key when it has one; `msgId`
   * defaults to the binding's id for the record or its key (spec: bindings-nats#idempotency,
   * TAP-NATS-040 for a signed record). `unsigned` publishes it without a signature all the same.
   */
  async publish(
    capability: string,
    input: unknown,
    o: {
      idempotency?: { principal: string; key: string };
      msgId?: string;
      /** Publish it without a signature even when the run has a key. */
      unsigned?: boolean;
      /** Sign with this key instead of the run's. */
      key?: SigningKey;
      /** Changes the record before it is signed. */
      record?: (r: TaskRecord) => TaskRecord;
      /** Changes the record after it is signed. */
      tamper?: (r: TaskRecord) => TaskRecord;
    } = {},
  ): Promise<{ record: TaskRecord; seq: number; duplicate: boolean }> {
    let record = recordFromDraft({ next_phase: capability, input }) as TaskRecord;
    record.requirements.target_agent = this.agentId;
    if (o.idempotency) record.metadata = { ...record.metadata, 'x-idempotency': o.idempotency };
    if (o.record) record = o.record(record);
    const key = o.key ?? this.signingKey;
    if (key && !o.unsigned) record = signRecord(record, key);
    if (o.tamper) record = o.tamper(record);
    let msgId = o.msgId ?? (o.idempotency ? `${o.idempotency.principal}:${capability}:${o.idempotency.key}` : `${record.task_id}:submit`);
    const signature = (record.metadata[RECORD_SIGNATURE] as { value?: string } | undefined)?.value;
    if (o.msgId === undefined && signature) msgId += `:${createHash('sha256').update(signature).digest('hex').slice(0, 32)}`;
    const body = JSON.stringify(record);
    const ack = await this.js.publish(taskSubject(S, capability), body, { msgID: msgId });
    this.leftovers?.published(taskSubject(S, capability), ack.seq, body, o.idempotency && { ...o.idempotency, capability });
    return { record, seq: ack.seq, duplicate: ack.duplicate };
  }

  /** Publishes a message of the harness's own making (a record it shaped, events it plants), noted for removal at the run's end. */
  async publishRaw(subject: string, data: string | Uint8Array, options: Parameters<JetStreamClient['publish']>[2]) {
    const ack = await this.js.publish(subject, data, options);
    this.leftovers?.published(subject, ack.seq, data);
    return ack;
  }

  /**
   * Reads the task's stream from the start until `done(entries)` holds or `ms` pass; on a fresh NATS
   * connection if `nc` is given. The messages the stream holds when the read begins are read first,
   * however long a loaded machine takes to deliver them (up to STORED_READ_MS): `ms` is the wait
   * for more, which starts once they are in. A read cut short by its own slowness would judge the
   * agent by messages the harness had not yet read.
   */
  async stream(taskId: string, done: (entries: Entry[]) => boolean, ms: number, nc: NatsConnection = this.nc): Promise<Entry[]> {
    const subject = eventSubject(S, taskId);
    const consumer = await this.lib
      .jetstream(nc)
      .consumers.get(S.events, { filter_subjects: subject, deliver_policy: this.lib.DeliverAll })
      .catch((err: Error) => {
        throw new Stop(fail(`the agent's durable tasks have no stream to resume from: ${S.events} cannot be read (${err.message})`));
      });
    const entries: Entry[] = [];
    if (done(entries)) return entries;
    const stored =
      (await this.jsm.streams.info(S.events, { subjects_filter: subject }).catch(() => undefined))?.state.subjects?.[subject] ?? 0;
    const messages = await consumer.consume({ max_messages: 64 });
    const close = () => void messages.close();
    let timer = setTimeout(close, stored > 0 ? Math.max(ms, STORED_READ_MS) : ms);
    try {
      for await (const m of messages) {
        let message: Entry['message'];
        try {
          message = m.json();
        } catch {
          message = { unreadable: m.string().slice(0, 200) };
        }
        entries.push({
          message,
          attempt: m.headers?.get('Tap-Attempt') || undefined,
          msgId: m.headers?.get('Nats-Msg-Id') || undefined,
          streamSeq: m.info.streamSequence,
        });
        if (done(entries)) break;
        if (entries.length === stored) {
          clearTimeout(timer);
          timer = setTimeout(close, ms);
        }
      }
    } finally {
      clearTimeout(timer);
      await messages.close();
      // The read's ordered consumer would stay on the agent's server for its inactive threshold (5 minutes).
      await consumer.delete().catch(() => false);
    }
    return entries;
  }

  /** The task's finished record in TAP_RESULTS, waiting up to `ms`. */
  finished(taskId: string, ms: number): Promise<TaskRecord | undefined> {
    return pollUntil(
      async () => (await this.jsm.streams.getMessage(S.results, { last_by_subj: resultSubject(S, taskId) }))?.json<TaskRecord>(),
      ms,
    );
  }

  /** The dead letters of `capability` in TAP_DEAD after sequence `after`, oldest first. */
  async deadAfter(capability: string, after: number): Promise<TaskRecord[]> {
    const info = await this.jsm.streams.info(S.dead).catch(() => null);
    const out: TaskRecord[] = [];
    if (!info) return out;
    for (let seq = Math.max(after + 1, info.state.first_seq); seq <= info.state.last_seq; seq++) {
      const m = await this.jsm.streams.getMessage(S.dead, { seq }).catch(() => null);
      if (m?.subject !== deadSubject(S, capability)) continue;
      try {
        out.push(m.json<TaskRecord>());
      } catch {
        // Not a record: no dead letter of the binding.
      }
    }
    return out;
  }

  /** The last sequence of TAP_DEAD now (0 when it is empty or missing): dead letters after it are new. */
  async deadMark(): Promise<number> {
    return (await this.jsm.streams.info(S.dead).catch(() => null))?.state.last_seq ?? 0;
  }

  /** The task's dead letter in TAP_DEAD after sequence `after`, waiting up to `ms`. */
  dead(capability: string, taskId: string, after: number, ms: number): Promise<TaskRecord | undefined> {
    return pollUntil(async () => {
      // Dead letters of one capability share a subject: look through the new ones for this task.
      const info = await this.jsm.streams.info(S.dead);
      for (let seq = info.state.last_seq; seq > Math.max(after, info.state.first_seq - 1); seq--) {
        const m = await this.jsm.streams.getMessage(S.dead, { seq }).catch(() => null);
        if (m?.subject !== deadSubject(S, capability)) continue;
        const r = m.json<TaskRecord>();
        if (r.task_id === taskId) return r;
      }
      return undefined;
    }, ms);
  }

  /** True while the queue still holds the message at stream sequence `seq`. */
  async queued(seq: number): Promise<boolean> {
    return (await this.jsm.streams.getMessage(S.tasks, { seq }).catch(() => null)) !== null;
  }

  /** Waits until the queue no longer holds `seq`; false if it still does after `ms`. */
  async drained(seq: number, ms: number): Promise<boolean> {
    return (await pollUntil(async () => ((await this.queued(seq)) ? undefined : true), ms)) === true;
  }

  /** The task id that TAP_IDEMPOTENCY holds for an identity (spec: bindings-nats#idempotency). */
  async holder(principal: string, capability: string, key: string): Promise<string | undefined> {
    const kv = await new this.lib.Kvm(this.nc).open(S.idempotency);
    const hash = createHash('sha256').update(`${principal}\0${capability}\0${key}`).digest('hex');
    return (await kv.get(hash).catch(() => null))?.string() || undefined;
  }

  close(): Promise<void> {
    return this.nc.close();
  }
}
