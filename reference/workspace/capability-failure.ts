/**
 * The capability's own failure in a task record (spec: bindings-workspace#workspace-1-1,
 * bindings-nats#durable-1-1): a record's `protocol` is its task's version, so a record of
 * TAP 1.1 carries CAPABILITY_FAILED where one of 1.0 carries INTERNAL_ERROR, each with the
 * retryable value the capability gave (spec: errors#capability-failed).
 */
import { errorPayload, TapError, type ErrorPayload } from '../core/errors.ts';
import { CapabilityError } from '../agent/handler.ts';
import type { TaskRecord } from './record.ts';

/** True when a record speaks TAP 1.1 or a later minor of 1 (its `protocol`), the version of its durable task. */
export function speaks11(record: Pick<TaskRecord, 'protocol'>): boolean {
  const m = /^tap\/1\.(\d+)$/.exec(record.protocol);
  return m !== null && Number(m[1]) >= 1;
}

/**
 * The error of a phase whose capability reported its own failure (a CapabilityError, or a
 * TapError of CAPABILITY_FAILED): CAPABILITY_FAILED for a record of 1.1, INTERNAL_ERROR for one
 * of 1.0, each with the capability's retryable value (spec: bindings-nats#durable-1-1, bindings-workspace#workspace-1-1); null
 * for any other error.
 */
export function capabilityFailure(error: Error, record: Pick<TaskRecord, 'protocol'>): ErrorPayload | null {
  const code = speaks11(record) ? 'CAPABILITY_FAILED' : 'INTERNAL_ERROR';
  if (error instanceof CapabilityError)
    return errorPayload(code, error.message.slice(0, 8192) || 'the capability failed', error.details, { retryable: error.retryable });
  if (error instanceof TapError && error.payload.code === 'CAPABILITY_FAILED') return { ...error.payload, code };
  return null;
}
