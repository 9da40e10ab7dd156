/**
 * tapctl nats tasks and tapctl nats dead-letters: the records on the capability queues and in
 * the dead-letter stream, read without consuming them (spec: bindings-nats#task-queue,
 * bindings-nats#dead-letters).
 */
import { deadSubject, taskSubject } from '../../jetstream/names.ts';
import { Wildcard } from '../../transports/nats/subjects.ts';
import type { TaskRecord } from '../../workspace/record.ts';
import type { CommandContext } from '../registry.ts';
import { excerpt, printJson, table } from '../workspace/format.ts';
import { withNats, readStream, requireStream, type NatsSession, type StoredRecord } from './connection.ts';

/** One queued record as `tasks` reports it. */
export interface QueuedTask {
  seq: number;
  capability: string;
  task_id: string | null;
  /** The record's state.attempts: 0 for a fresh or requeued record. */
  attempts: number | null;
  /**
   * "waiting" when no runner has had it yet, "delivered" when a runner holds it or it waits for
   * its redelivery after an expired lease (the server keeps the delivery count of those).
   */
  delivery: 'waiting' | 'delivered';
  queued_at: string;
  input?: unknown;
  problem?: string;
}

/** One dead letter as `dead-letters` reports it. */
export interface DeadLetter {
  seq: number;
  capability: string;
  task_id: string | null;
  attempts: number | null;
  reason: TaskRecord['state']['last_error'];
  dead_since: string;
  /** True for a queue message that was not a task record: the runner kept an excerpt, and it cannot be requeued. */
  rejected?: boolean;
  problem?: string;
}

/**
 * A record's `state.attempts` for people, with what it counts: the deliveries of its phase before
 * the current one (the delivery count less one, TAP-NATS-019), so the text says the number the
 * JSON gives.
 */
export function attemptsText(attempts: number): string {
  return `attempts ${attempts} (${attempts === 0 ? 'no earlier delivery' : `${attempts} earlier deliver${attempts === 1 ? 'y' : 'ies'}`})`;
}

/** A dead letter's `state.attempts` for people: the deliveries it had (TAP-NATS-029). */
export function deadAttemptsText(attempts: number): string {
  return `attempts ${attempts} (${attempts} deliver${attempts === 1 ? 'y' : 'ies'})`;
}

const tail = (subject: string, head: string): string => (subject.startsWith(head) ? subject.slice(head.length) : subject);

/** The highest stream sequence each capability's consumer has delivered, by capability subject. */
async function deliveredUpTo(s: NatsSession): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for await (const c of s.jsm.consumers.list(s.names.tasks)) {
    if (c.config.filter_subject) out.set(c.config.filter_subject, c.delivered.stream_seq);
  }
  return out;
}

/** The records on TAP_TASKS, oldest first, optionally of one capability. */
export async function queuedTasks(s: NatsSession, capability: string | undefined, limit: number): Promise<QueuedTask[]> {
  const head = taskSubject(s.names, Wildcard.TAIL).slice(0, -1);
  const records = await readStream<TaskRecord>(s, s.names.tasks, taskSubject(s.names, capability ?? Wildcard.TAIL), limit);
  const delivered = await deliveredUpTo(s);
  return records.map((r: StoredRecord<TaskRecord>) => ({
    seq: r.seq,
    capability: tail(r.subject, head),
    task_id: r.value?.task_id ?? null,
    attempts: r.value?.state?.attempts ?? null,
    delivery: r.seq <= (delivered.get(r.subject) ?? 0) ? 'delivered' : 'waiting',
    queued_at: r.time,
    ...(r.value ? { input: r.value.context?.current_input } : {}),
    ...(r.unreadable ? { problem: `not a task record: ${r.unreadable}` } : {}),
  }));
}

/** The records on TAP_DEAD, oldest first, optionally of one capability. */
export async function deadLetters(s: NatsSession, capability: string | undefined, limit: number): Promise<DeadLetter[]> {
  const head = deadSubject(s.names, Wildcard.TAIL).slice(0, -1);
  const records = await readStream<TaskRecord>(s, s.names.dead, deadSubject(s.names, capability ?? Wildcard.TAIL), limit);
  return records.map((r) => ({
    seq: r.seq,
    capability: tail(r.subject, head),
    task_id: r.value?.task_id ?? null,
    attempts: r.value?.state?.attempts ?? null,
    reason: r.value?.state?.last_error ?? null,
    dead_since: r.time,
    ...(r.value?.metadata && Object.hasOwn(r.value.metadata, 'x-rejected-record') ? { rejected: true } : {}),
    ...(r.unreadable ? { problem: `not a task record: ${r.unreadable}` } : {}),
  }));
}

/** Runs `tapctl nats tasks`. */
export async function runTasks(
  o: { server: string; json: boolean; capability?: string; limit: number },
  ctx: CommandContext,
): Promise<number> {
  return withNats(o.server, async (s) => {
    const tasks = await queuedTasks(s, o.capability, o.limit);
    const total = (await requireStream(s, s.names.tasks)).state.messages;
    if (o.json) {
      printJson(ctx.io, { stream: s.names.tasks, total, tasks });
      return 0;
    }
    if (tasks.length === 0) {
      ctx.io.out(`No records on ${s.names.tasks}${o.capability ? ` for ${o.capability}` : ''}: every queue is empty.\n`);
      return 0;
    }
    const byCap = new Map<string, QueuedTask[]>();
    for (const t of tasks) byCap.set(t.capability, [...(byCap.get(t.capability) ?? []), t]);
    let text = `${tasks.length} of ${total} records on ${s.names.tasks}\n`;
    for (const [cap, list] of byCap) {
      text += `\n${cap}\n`;
      text += table(
        list.map((t) => [
          `#${t.seq}`,
          t.task_id ?? '?',
          t.attempts === null ? '' : attemptsText(t.attempts),
          t.delivery === 'waiting' ? 'waiting for a runner' : 'delivered: held by a runner or waiting for redelivery',
          t.problem ?? excerpt(t.input, 60),
        ]),
      );
    }
    ctx.io.out(text);
    return 0;
  });
}

/** Runs `tapctl nats dead-letters`. */
export async function runDeadLetters(
  o: { server: string; json: boolean; capability?: string; limit: number },
  ctx: CommandContext,
): Promise<number> {
  return withNats(o.server, async (s) => {
    const dead = await deadLetters(s, o.capability, o.limit);
    if (o.json) {
      printJson(ctx.io, { stream: s.names.dead, dead_letters: dead });
      return 0;
    }
    if (dead.length === 0) {
      ctx.io.out(`No dead letters on ${s.names.dead}${o.capability ? ` for ${o.capability}` : ''}.\n`);
      return 0;
    }
    let text = `${dead.length} dead letter${dead.length === 1 ? '' : 's'} on ${s.names.dead}\n`;
    text += table(
      dead.map((d) => [
        `#${d.seq}`,
        d.task_id ?? '?',
        d.capability,
        d.attempts === null ? '' : deadAttemptsText(d.attempts),
        d.problem ?? (d.reason ? `${d.reason.code}: ${excerpt(d.reason.message, 80)}` : 'no reason recorded'),
      ]),
    );
    text += `\nRun tapctl nats requeue <task_id> (or --all) to queue them again.\n`;
    ctx.io.out(text);
    return 0;
  });
}
