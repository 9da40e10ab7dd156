/**
 * A phase's outcome on the durable queue (spec: bindings-nats#task-queue, bindings-nats#event-streams):
 * the finished record it leaves in TAP_RESULTS, the task.result that ends its stream, and the
 * outcome a stored task.result states.
 */
import { TapError, type ErrorPayload } from '../core/errors.ts';
import { capabilityFailure } from '../workspace/capability-failure.ts';
import type { TaskRecord } from '../workspace/record.ts';

/** What a phase came to: its output, or the error it failed with. */
export interface Outcome {
  output?: unknown;
  error?: Error;
}

/** The record a phase leaves: a history entry, the status, and next_phase null (one-phase tasks). */
export function finished(record: TaskRecord, agentId: string, attempts: number, outcome: Outcome): TaskRecord {
  const now = new Date().toISOString();
  const next = structuredClone(record);
  next.context.history.push({
    agent: agentId,
    phase: record.next_phase ?? '',
    timestamp: now,
    input: record.context.current_input,
    output: outcome.error ? null : (outcome.output ?? null),
    artifacts: [],
  });
  next.current_phase = record.next_phase;
  next.next_phase = null;
  next.state.attempts = attempts;
  next.state.processed_by = agentId;
  next.state.status = outcome.error ? 'failed' : 'completed';
  const error = errorOf(outcome, record);
  next.state.last_error = error ? { code: error.code, message: error.message, at: now } : null;
  return next;
}

/**
 * The error a failed phase ends with, in the one form its task.result, its finished record and its
 * audit record share: the capability's own failure, a TapError's payload, or INTERNAL_ERROR.
 */
export function errorOf(outcome: Outcome, record: Pick<TaskRecord, 'protocol'>): ErrorPayload | undefined {
  if (!outcome.error) return undefined;
  const failure = capabilityFailure(outcome.error, record);
  if (failure) return failure;
  if (outcome.error instanceof TapError) return outcome.error.payload;
  return { code: 'INTERNAL_ERROR', message: outcome.error.message.slice(0, 8192), retryable: false };
}

/** The payload of the task.result that ends a durable task's stream of `record`. */
export function resultPayload(outcome: Outcome, record: Pick<TaskRecord, 'protocol'>): Record<string, unknown> {
  const error = errorOf(outcome, record);
  return error ? { status: 'failed', error } : { status: 'completed', output: outcome.output ?? null };
}

/** The outcome a stored task.result states: its output, or its error (spec: bindings-nats#event-streams). */
export function outcomeOfResult(payload: Record<string, unknown>): Outcome {
  if (payload.status === 'completed') return { output: payload.output ?? null };
  const e = payload.error as Partial<ErrorPayload> | undefined;
  if (typeof e === 'object' && e !== null && typeof e.code === 'string' && typeof e.message === 'string')
    return { error: new TapError(e as ErrorPayload) };
  return { error: new TapError('INTERNAL_ERROR', 'the stored task.result states a failure without an error') };
}
