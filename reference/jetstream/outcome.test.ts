/**
 * A durable phase's outcome (spec: bindings-nats#task-queue): the finished record, the task.result
 * and the audit record state one error, with a code of the registry and the error's own message.
 */
import { describe, expect, it } from 'vitest';
import { CapabilityError } from '../agent/handler.ts';
import { TapError } from '../core/errors.ts';
import { recordFromDraft, type TaskRecord } from '../workspace/record.ts';
import { errorOf, finished, resultPayload } from './outcome.ts';

const record = (protocol: string): TaskRecord =>
  ({ ...recordFromDraft({ next_phase: 'work.echo', input: { a: 1 } }), protocol }) as unknown as TaskRecord;

describe('the error a durable phase ends with', () => {
  it('is INTERNAL_ERROR for an error that is not TAP’s, in the record and in the result alike', () => {
    const outcome = { error: new Error('the model endpoint is down') };
    const done = finished(record('tap/1.1'), 'agent-a', 1, outcome);
    expect(done.state.last_error).toMatchObject({ code: 'INTERNAL_ERROR', message: 'the model endpoint is down' });
    expect(resultPayload(outcome, record('tap/1.1'))).toEqual({
      status: 'failed',
      error: { code: 'INTERNAL_ERROR', message: 'the model endpoint is down', retryable: false },
    });
  });

  it('keeps a TapError’s code and message, without the code again in front of the message', () => {
    const outcome = { error: new TapError('CAPABILITY_NOT_SUPPORTED', 'text.reverse asked its requester for input') };
    const done = finished(record('tap/1.1'), 'agent-a', 1, outcome);
    expect(done.state.last_error).toMatchObject({
      code: 'CAPABILITY_NOT_SUPPORTED',
      message: 'text.reverse asked its requester for input',
    });
  });

  it('is the capability’s own failure by the record’s version: CAPABILITY_FAILED at 1.1, INTERNAL_ERROR at 1.0', () => {
    const outcome = { error: new CapabilityError('the sum passed 2^53 − 1') };
    expect(errorOf(outcome, record('tap/1.1'))).toMatchObject({ code: 'CAPABILITY_FAILED', message: 'the sum passed 2^53 − 1' });
    expect(errorOf(outcome, record('tap/1.0'))).toMatchObject({ code: 'INTERNAL_ERROR', message: 'the sum passed 2^53 − 1' });
    expect(finished(record('tap/1.1'), 'agent-a', 1, outcome).state.last_error?.code).toBe('CAPABILITY_FAILED');
  });

  it('is none for a completed phase', () => {
    expect(errorOf({ output: 1 }, record('tap/1.1'))).toBeUndefined();
    expect(finished(record('tap/1.1'), 'agent-a', 1, { output: 1 }).state.last_error).toBeNull();
  });
});
