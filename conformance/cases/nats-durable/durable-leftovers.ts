/**
 * What the nats-durable profile's cases put on the agent's server: the records they published to
 * the queues, and what the agent made of them there (dead letters in TAP_DEAD, finished records in
 * TAP_RESULTS, task streams in TAP_EVENTS, keys in TAP_IDEMPOTENCY, and the advisory of a record
 * that ran out of deliveries, if the agent left it in TAP_ADVISORIES). Once every case has ended the
 * run removes exactly those, by the task ids and stream sequences it noted, and nothing a user or
 * the agent made otherwise; the agent's consumers stay, and the run says so (spec:
 * bindings-nats#task-queue, TAP-NATS-053).
 */
import type { JetStreamManager, MsgRequest, StoredMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { idempotencyKey } from '../../../reference/jetstream/submit.ts';
import { DEFAULT_NAMES as S, eventSubject, resultSubject, taskSubject } from '../../../reference/jetstream/names.ts';
import { Kvm } from '../../../reference/transports/nats/client.ts';
import { maxDeliveriesAdvisory, Wildcard } from '../../../reference/transports/nats/subjects.ts';
import { count, listOf } from '../../report/model.ts';
import type { CaseContext } from '../../context.ts';
import { TIDY_KEY, type Tidy } from '../../tidy.ts';

/** What the removal needs of the harness's connection to the server. */
export interface LeftoverServer {
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  close(): Promise<void>;
}

/** The subjects of the queues and of the task streams, up to the capability or task id. */
const TASKS_HEAD = taskSubject(S, Wildcard.TAIL).slice(0, -1);
const EVENTS_HEAD = eventSubject(S, Wildcard.TAIL).slice(0, -1);
/** A dead letter's Nats-Msg-Id names the TAP_TASKS sequence of the message it stands for (TAP-NATS-056). */
const STANDS_FOR = /:dead:(\d+)$/;

/** The records a run's cases published, and the removal of what they left. */
export class DurableLeftovers implements Tidy {
  private readonly taskIds = new Set<string>();
  private readonly queued = new Set<number>();
  private readonly keys = new Set<string>();
  /** TAP_DEAD's last sequence before the run's first record: only later letters can be the run's. */
  private deadFrom?: Promise<number>;

  constructor(private readonly open: () => Promise<LeftoverServer>) {}

  /** Notes where TAP_DEAD stands, the first time a view of the run opens (before anything is published). */
  begin(deadMark: () => Promise<number>): Promise<number> {
    this.deadFrom ??= deadMark().catch(() => 0);
    return this.deadFrom;
  }

  /** Notes a message the run published: its stream sequence on a queue, its task (from the subject or the record). */
  published(
    subject: string,
    seq: number,
    data: string | Uint8Array,
    idempotency?: { principal: string; capability: string; key: string },
  ): void {
    if (subject.startsWith(TASKS_HEAD)) this.queued.add(seq);
    if (subject.startsWith(EVENTS_HEAD)) this.taskIds.add(subject.slice(EVENTS_HEAD.length));
    const taskId = taskIdOf(data);
    if (taskId !== undefined) this.taskIds.add(taskId);
    if (idempotency) this.keys.add(idempotencyKey(idempotency.principal, idempotency.capability, idempotency.key));
  }

  async tidy(): Promise<string[]> {
    if (this.queued.size === 0 && this.taskIds.size === 0) return [];
    const server = await this.open();
    try {
      await this.settled(server);
      const removed: Array<[number, string]> = [
        [await this.fromQueue(server), 'queued record'],
        [await this.fromDead(server), 'dead letter'],
        [await this.fromAdvisories(server), 'unanswered max-deliveries advisory'],
        [await this.purged(server, S.results, resultSubject), 'finished record'],
        [await this.purged(server, S.events, eventSubject), 'task stream'],
        [await this.fromKeys(server), 'idempotency key'],
      ];
      const said = removed.filter(([n]) => n > 0).map(([n, noun]) => count(n, noun));
      const lines = [
        said.length > 0
          ? `removed what the nats-durable cases left on the server: ${listOf(said)}, all of records the run published; nothing else was touched`
          : 'the nats-durable cases left nothing on the server to remove',
      ];
      const consumers = await this.consumers(server);
      if (consumers.length > 0)
        lines.push(
          `the consumers ${listOf(consumers)} of ${S.tasks} and of ${S.advisories} stay: the agent's durable runners made them, and every runner of those capabilities shares them (TAP-NATS-053, TAP-NATS-071), so the run does not delete them. Once the agent has stopped, \`${removal(consumers)}\` removes them`,
        );
      return lines;
    } finally {
      await server.close();
    }
  }

  /** Deletes the run's records still on the queue (a record no runner took). */
  private async fromQueue(s: LeftoverServer): Promise<number> {
    let n = 0;
    for (const seq of this.queued) if (await s.jsm.streams.deleteMessage(S.tasks, seq).catch(() => false)) n++;
    return n;
  }

  /** Deletes the dead letters of the run's tasks, and those standing for a message the run published, since the run began. */
  private async fromDead(s: LeftoverServer): Promise<number> {
    const info = await s.jsm.streams.info(S.dead).catch(() => null);
    if (!info) return 0;
    const from = await (this.deadFrom ?? Promise.resolve(0));
    let n = 0;
    for (let seq = Math.max(from + 1, info.state.first_seq); seq <= info.state.last_seq; seq++) {
      const m = await s.jsm.streams.getMessage(S.dead, { seq }).catch(() => null);
      if (!m) continue;
      const stands = STANDS_FOR.exec(m.header?.get('Nats-Msg-Id') ?? '');
      const ours = (stands !== null && this.queued.has(Number(stands[1]))) || this.taskIds.has(taskIdOf(m.data) ?? '');
      if (ours && (await s.jsm.streams.deleteMessage(S.dead, seq).catch(() => false))) n++;
    }
    return n;
  }

  /** Deletes the max-deliveries advisories that name a message the run published and that no runner answered. */
  private async fromAdvisories(s: LeftoverServer): Promise<number> {
    let n = 0;
    for await (const m of storedOn(s.jsm, S.advisories, maxDeliveriesAdvisory(S.tasks, Wildcard.TOKEN))) {
      const names = (() => {
        try {
          return m.json<{ stream?: unknown; stream_seq?: unknown }>();
        } catch {
          return undefined;
        }
      })();
      const ours = names?.stream === S.tasks && typeof names.stream_seq === 'number' && this.queued.has(names.stream_seq);
      if (ours && (await s.jsm.streams.deleteMessage(S.advisories, m.seq).catch(() => false))) n++;
    }
    return n;
  }

  /**
   * Waits, at most SETTLE_MS, until no runner holds a delivery of a conformance queue and a queue a
   * runner pulls from is empty: a task a case did not wait for writes its result and events before
   * its delivery is acknowledged (TAP-NATS-020), so they are there to remove.
   */
  private async settled(s: LeftoverServer): Promise<void> {
    const deadline = Date.now() + SETTLE_MS;
    while (Date.now() < deadline) {
      let busy = 0;
      try {
        for await (const c of s.jsm.consumers.list(S.tasks))
          if (conformanceQueue(c.config)) busy += c.num_ack_pending + (c.num_waiting > 0 ? c.num_pending : 0);
      } catch {
        return;
      }
      if (busy === 0) return;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Purges each run task's subject of a stream (a task id no subject can hold was never stored under one). */
  private async purged(s: LeftoverServer, stream: string, subject: (names: typeof S, taskId: string) => string): Promise<number> {
    let n = 0;
    for (const id of this.taskIds) {
      let filter: string;
      try {
        filter = subject(S, id);
      } catch {
        continue;
      }
      n += (await s.jsm.streams.purge(stream, { filter }).catch(() => null))?.purged ?? 0;
    }
    return n;
  }

  /** Purges the run's keys from TAP_IDEMPOTENCY. */
  private async fromKeys(s: LeftoverServer): Promise<number> {
    if (this.keys.size === 0) return 0;
    const kv = await new Kvm(s.nc).open(S.idempotency).catch(() => null);
    if (!kv) return 0;
    let n = 0;
    for (const key of this.keys) {
      if (!(await kv.get(key).catch(() => null))) continue;
      if (
        await kv.purge(key).then(
          () => true,
          () => false,
        )
      )
        n++;
    }
    return n;
  }

  /** The consumers of TAP_TASKS that take a conformance capability's queue. */
  private async consumers(s: LeftoverServer): Promise<string[]> {
    const names: string[] = [];
    try {
      for await (const c of s.jsm.consumers.list(S.tasks)) if (conformanceQueue(c.config)) names.push(c.name);
    } catch {
      // No TAP_TASKS: no consumer to speak of.
    }
    return names;
  }
}

/**
 * The messages of `stream` on the subjects `subject` matches, oldest first, read one by one with
 * the server's next-by-subject get: a work-queue stream acknowledged out of order has long runs of
 * deleted sequences, which a walk by sequence would ask for one at a time.
 */
export async function* storedOn(jsm: JetStreamManager, stream: string, subject: string): AsyncGenerator<StoredMsg> {
  for (let seq = 1; ; ) {
    const m = await jsm.streams.getMessage(stream, { seq, next_by_subj: subject } as unknown as MsgRequest).catch(() => null);
    if (!m) return;
    yield m;
    seq = m.seq + 1;
  }
}

/** How to delete consumers of the queue, with their twins of TAP_ADVISORIES: the package's tapctl. */
export const removal = (names: readonly string[]): string => `npx tapctl nats remove-consumer ${names.join(' ')}`;

/** How long the removal waits for the agent to finish the run's tasks it still holds. */
const SETTLE_MS = 5_000;

/** True for a consumer of a conformance capability's queue. */
function conformanceQueue(config: { filter_subject?: string; filter_subjects?: string[] }): boolean {
  return [config.filter_subject, ...(config.filter_subjects ?? [])].some((f) => f?.startsWith(`${TASKS_HEAD}tap.test.`));
}

/** The task_id of a published record or message, if it has one. */
function taskIdOf(data: string | Uint8Array): string | undefined {
  try {
    const v = JSON.parse(typeof data === 'string' ? data : new TextDecoder().decode(data)) as { task_id?: unknown };
    return typeof v?.task_id === 'string' ? v.task_id : undefined;
  } catch {
    return undefined;
  }
}

const held = new WeakMap<object, DurableLeftovers>();

/** The run's leftovers (one per repetition's shared scenarios), made by the first view that asks. */
export function leftoversOf(ctx: CaseContext, open: () => Promise<LeftoverServer>): DurableLeftovers {
  let l = held.get(ctx.env.shared);
  if (!l) {
    l = new DurableLeftovers(open);
    held.set(ctx.env.shared, l);
    ctx.env.shared.set(`${TIDY_KEY}nats-durable`, Promise.resolve(l));
  }
  return l;
}
