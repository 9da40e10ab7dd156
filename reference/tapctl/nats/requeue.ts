/**
 * tapctl nats requeue: moves dead letters back to their capability's queue (spec:
 * bindings-nats#dead-letters). The record goes back with `attempts` 0 and status "pending" as a
 * new message, so the server counts its deliveries from one again; only once the queue has
 * acknowledged it is the dead letter deleted.
 */
import { jetstream } from '../../transports/nats/client.ts';
import type { TaskRecord } from '../../workspace/record.ts';
import { taskSubject } from '../../jetstream/streams.ts';
import { CliError, type CommandContext } from '../registry.ts';
import { printJson } from '../workspace/format.ts';
import { withNats, requireStream, type NatsSession } from './connection.ts';
import { deadAttemptsText, deadLetters, type DeadLetter } from './records.ts';

/** What happened to one dead letter. */
export interface Requeued {
  task_id: string;
  capability: string;
  /** Its sequence in TAP_DEAD, now deleted. */
  dead_seq: number;
  /** Its sequence on TAP_TASKS. */
  queue_seq: number;
  /** How many deliveries the dead series had. */
  previous_attempts: number | null;
  previous_error: TaskRecord['state']['last_error'];
}

/** The record as it goes back on the queue: a fresh attempt series, the old error kept in metadata. */
export function requeuedRecord(dead: TaskRecord, deadSeq: number, now = new Date()): TaskRecord {
  const next = structuredClone(dead);
  next.metadata = {
    ...next.metadata,
    'x-requeued': { at: now.toISOString(), dead_seq: deadSeq, attempts: dead.state.attempts, last_error: dead.state.last_error },
  };
  next.state = { ...next.state, attempts: 0, status: 'pending', last_error: null, processed_by: null };
  return next;
}

/** Requeues the dead letters named (all of them when `ids` is "all"); throws for an unknown id. */
export async function requeue(s: NatsSession, ids: string[] | 'all', capability?: string): Promise<Requeued[]> {
  await requireStream(s, s.names.tasks);
  const dead = await deadLetters(s, capability, Number.MAX_SAFE_INTEGER);
  const chosen = ids === 'all' ? dead.filter((d) => !d.rejected) : ids.map((id) => dead.find((d) => d.task_id === id) ?? id);
  const unknown = chosen.filter((d): d is string => typeof d === 'string');
  if (unknown.length > 0)
    throw new CliError(`no dead letter with task id ${unknown.join(', ')} in ${s.names.dead}`, {
      where: s.url,
      hint: 'tapctl nats dead-letters lists the dead letters and their task ids.',
      code: 'UNKNOWN_TASK',
    });
  // spec: bindings-nats#task-queue: a message that was not a task record has nothing to run again.
  const rejected = chosen.filter((d): d is DeadLetter => typeof d !== 'string' && d.rejected === true);
  if (rejected.length > 0)
    throw new CliError(
      `${rejected.map((d) => d.task_id).join(', ')} ${rejected.length === 1 ? 'was' : 'were'} not a task record and cannot be requeued`,
      {
        where: s.url,
        hint: 'The dead letter keeps an excerpt of the message in metadata["x-rejected-record"]; submit a corrected record with tapctl nats submit.',
        code: 'NOT_A_RECORD',
      },
    );
  const js = jetstream(s.nc);
  const out: Requeued[] = [];
  for (const d of chosen as Exclude<(typeof chosen)[number], string>[]) {
    const stored = await s.jsm.streams.getMessage(s.names.dead, { seq: d.seq });
    if (!stored) continue; // requeued meanwhile by someone else
    const record = stored.json<TaskRecord>();
    const next = requeuedRecord(record, d.seq);
    // A message id of its own: the submit's id may still be inside the de-duplication window.
    const ack = await js.publish(taskSubject(s.names, d.capability), JSON.stringify(next), {
      msgID: `${record.task_id}:requeue:${d.seq}`,
    });
    await s.jsm.streams.deleteMessage(s.names.dead, d.seq);
    out.push({
      task_id: record.task_id,
      capability: d.capability,
      dead_seq: d.seq,
      queue_seq: ack.seq,
      previous_attempts: d.attempts,
      previous_error: record.state.last_error,
    });
  }
  return out;
}

/** Runs `tapctl nats requeue`. */
export async function runRequeue(
  o: { server: string; json: boolean; ids: string[] | 'all'; capability?: string },
  ctx: CommandContext,
): Promise<number> {
  return withNats(o.server, async (s) => {
    const done = await requeue(s, o.ids, o.capability);
    if (o.json) {
      printJson(ctx.io, { requeued: done });
      return 0;
    }
    if (done.length === 0) {
      ctx.io.out(`No dead letters on ${s.names.dead}: nothing to requeue.\n`);
      return 0;
    }
    for (const r of done) {
      ctx.io.out(
        `Requeued ${r.task_id} to ${taskSubject(s.names, r.capability)} (queue sequence ${r.queue_seq}) after ${r.previous_attempts === null ? 'an unknown number of deliveries' : deadAttemptsText(r.previous_attempts)}` +
          `${r.previous_error ? `, ${r.previous_error.code}` : ''}; a new attempt series starts at attempts 0; dead letter #${r.dead_seq} removed.\n`,
      );
    }
    return 0;
  });
}
