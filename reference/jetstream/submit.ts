import { createHash } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '../transports/nats/client.ts';
import { describeIssues, recordFromDraft, type TaskDraft, type TaskRecord } from '../workspace/record.ts';
import { validateAgainst } from '../core/validate.ts';
import { DEFAULT_NAMES, taskSubject, type DurableNames } from './streams.ts';

/** What a durable submit returns: the record as queued, and whether the server had it already. */
export interface DurableSubmitted {
  record: TaskRecord;
  /** The stream sequence of the queued record. */
  seq: number;
  /** True when the server dropped the publish as a duplicate within its window. */
  duplicate: boolean;
}

/** The idempotency identity of a submit: principal, capability and key (spec: bindings-nats#idempotency). */
export interface IdempotencyOf {
  principal: string;
  key: string;
}

/** The Nats-Msg-Id of a submit with an idempotency key, or of the record itself without one. */
export function submitMsgId(capability: string, record: TaskRecord, idem?: IdempotencyOf): string {
  return idem ? `${idem.principal}:${capability}:${idem.key}` : `${record.task_id}:submit`;
}

/** The key of an idempotency record in TAP_IDEMPOTENCY: a hash, since bucket keys cannot hold every character. */
export function idempotencyKey(principal: string, capability: string, key: string): string {
  return createHash('sha256').update(`${principal}\0${capability}\0${key}`).digest('hex');
}

/**
 * Queues a task record for its `next_phase` capability on TAP_TASKS (spec: bindings-nats#task-queue):
 * the draft is completed as in the workspace binding and checked against task-record.schema.json.
 */
export async function submitDurable(
  nc: NatsConnection,
  draft: TaskDraft,
  options: { names?: DurableNames; idempotency?: IdempotencyOf } = {},
): Promise<DurableSubmitted> {
  const names = options.names ?? DEFAULT_NAMES;
  const record = recordFromDraft(draft) as TaskRecord;
  const issues = validateAgainst('task-record.schema.json', record);
  if (issues) throw new TypeError(`the task record does not match task-record.schema.json: ${describeIssues(issues)}`);
  if (typeof record.next_phase !== 'string') throw new TypeError('a durable task needs next_phase: the capability that runs it');
  if (options.idempotency) record.metadata = { ...record.metadata, 'x-idempotency': { ...options.idempotency } };
  const js = jetstream(nc);
  const ack = await js.publish(taskSubject(names, record.next_phase), JSON.stringify(record), {
    msgID: submitMsgId(record.next_phase, record, options.idempotency),
  });
  return { record, seq: ack.seq, duplicate: ack.duplicate };
}
