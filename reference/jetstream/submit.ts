import { createHash } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '../transports/nats/client.ts';
import { describeIssues, recordFromDraft, type TaskDraft, type TaskRecord } from '../workspace/record.ts';
import { extended } from '../core/extended.ts';
import { validateAgainst } from '../core/validate.ts';
import type { SigningKey } from '../trust.ts';
import { RECORD_SIGNATURE, signRecord } from './signatures.ts';
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

/**
 * The Nats-Msg-Id of a submit with an idempotency key, or of the record itself without one. A
 * signed record's id ends with a digest of its signature (spec: bindings-nats#signed-records), so
 * that no one who cannot sign it can publish a message with its id first and have the server drop it.
 */
export function submitMsgId(capability: string, record: TaskRecord, idem?: IdempotencyOf): string {
  const id = idem ? `${idem.principal}:${capability}:${idem.key}` : `${record.task_id}:submit`;
  const signature = (record.metadata?.[RECORD_SIGNATURE] as { value?: unknown } | undefined)?.value;
  if (typeof signature !== 'string') return id;
  return `${id}:${createHash('sha256').update(signature).digest('hex').slice(0, 32)}`;
}

/** The key of an idempotency record in TAP_IDEMPOTENCY: a hash, since bucket keys cannot hold every character. */
export function idempotencyKey(principal: string, capability: string, key: string): string {
  return createHash('sha256').update(`${principal}\0${capability}\0${key}`).digest('hex');
}

/** Options of `submitDurable`. */
export interface DurableSubmitOptions {
  names?: DurableNames;
  /** The idempotency identity; with a signing key, its principal is the key's (and may be left out). */
  idempotency?: IdempotencyOf | { key: string };
  /** The submitter's key: the record is signed, and its principal is the key's (spec: bindings-nats#signed-records). */
  signingKey?: SigningKey;
}

/** The idempotency identity of a submit: the key's principal when it is signed, which a principal given must match. */
function identityOf(o: DurableSubmitOptions): IdempotencyOf | undefined {
  if (!o.idempotency) return undefined;
  const given = 'principal' in o.idempotency ? o.idempotency.principal : undefined;
  if (o.signingKey && given !== undefined && given !== o.signingKey.principal)
    throw new TypeError(
      `the idempotency principal "${given}" is not the signer ${o.signingKey.principal}: a signed record claims keys of its signer only`,
    );
  const principal = given ?? o.signingKey?.principal;
  if (principal === undefined) throw new TypeError('an idempotency key needs a principal, or a signing key whose principal it is');
  return { principal, key: o.idempotency.key };
}

/**
 * Queues a task record for its `next_phase` capability on TAP_TASKS (spec: bindings-nats#task-queue):
 * the draft is completed as in the workspace binding and checked against task-record.schema.json;
 * with a signing key, the record carries its submitter's signature (spec: bindings-nats#signed-records).
 */
export async function submitDurable(nc: NatsConnection, draft: TaskDraft, options: DurableSubmitOptions = {}): Promise<DurableSubmitted> {
  const names = options.names ?? DEFAULT_NAMES;
  let record = recordFromDraft(draft) as TaskRecord;
  const issues = validateAgainst('task-record.schema.json', record);
  if (issues) throw new TypeError(`the task record does not match task-record.schema.json: ${describeIssues(issues)}`);
  const capability = record.next_phase;
  if (typeof capability !== 'string') throw new TypeError('a durable task needs next_phase: the capability that runs it');
  const idempotency = identityOf(options);
  if (idempotency) record.metadata = extended(record.metadata, { 'x-idempotency': { ...idempotency } });
  if (options.signingKey) record = signRecord(record, options.signingKey);
  const js = jetstream(nc);
  const ack = await js.publish(taskSubject(names, capability), JSON.stringify(record), {
    msgID: submitMsgId(capability, record, idempotency),
  });
  return { record, seq: ack.seq, duplicate: ack.duplicate };
}
