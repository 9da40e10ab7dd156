/**
 * What a durable runner checks of a queue message before it looks anything up with its values
 * (spec: bindings-nats#task-queue, TAP-NATS-037; bindings-nats#signed-records, TAP-NATS-038): a
 * task record by task-record.schema.json (whose identifier grammar keeps wildcards out of
 * `task_id`), for this queue's capability, with a well-formed idempotency identity, and, when
 * the runner holds a trust file, signed by a principal it knows.
 */
import type { TrustFile } from '../trust.ts';
import { checkRecord, MAX_RECORD_BYTES, type RecordProblem, type TaskRecord } from '../workspace/record.ts';
import { verifyRecord } from './signatures.ts';

/** A record the runner may run, with the principal that signed it (when the runner verifies signatures). */
export type Intake =
  | { ok: true; record: TaskRecord; principal?: string }
  /** Refused: why, and the record when the message is one (valid against the schema) that this runner may not run. */
  | { ok: false; problem: RecordProblem; record?: TaskRecord };

/** What the checks need to know of the runner. */
export interface IntakeOptions {
  /** The capability of the queue: a record's `next_phase` must name it. */
  capability: string;
  /** With a trust file, only records signed by a principal in it are taken. */
  trust?: TrustFile;
}

/** A string of 1 to 256 characters without control characters, as idempotency keys are (envelope.schema.json). */
const KEYLIKE = /^[^\u0000-\u001f\u007f-\u009f\u2028\u2029]{1,256}$/;

/** The problem of a record's `metadata["x-idempotency"]`, if it has one and it is not `{ principal, key }` of strings. */
function idempotencyProblem(record: TaskRecord): string | undefined {
  if (!Object.hasOwn(record.metadata, 'x-idempotency')) return undefined;
  const idem = record.metadata['x-idempotency'] as { principal?: unknown; key?: unknown } | null;
  const ok =
    typeof idem === 'object' &&
    idem !== null &&
    typeof idem.principal === 'string' &&
    KEYLIKE.test(idem.principal) &&
    typeof idem.key === 'string' &&
    KEYLIKE.test(idem.key);
  return ok
    ? undefined
    : 'metadata["x-idempotency"] must be { "principal", "key" }, each a string of 1 to 256 characters without control characters';
}

/** Checks a queue message's bytes; nothing here reads the server. */
export function takeIn(bytes: Uint8Array, o: IntakeOptions): Intake {
  const checked = checkRecord(bytes, bytes.byteLength > MAX_RECORD_BYTES, 'the queue message');
  if (!checked.ok) {
    const { ok: _ok, epoch: _epoch, ...problem } = checked;
    return { ok: false, problem };
  }
  const record = checked.record;
  const refuse = (code: RecordProblem['code'], message: string): Intake => ({ ok: false, problem: { code, message }, record });
  if (record.next_phase !== o.capability)
    return refuse(
      'INVALID_MESSAGE',
      `the record's next_phase ${JSON.stringify(record.next_phase)} is not ${o.capability}, the capability of the queue it was published to`,
    );
  const idem = idempotencyProblem(record);
  if (idem) return refuse('INVALID_MESSAGE', idem);
  if (!o.trust) return { ok: true, record };
  const verified = verifyRecord(record, o.trust);
  if (!verified.ok) return refuse(verified.code, verified.message);
  return { ok: true, record, principal: verified.principal };
}
