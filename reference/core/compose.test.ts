import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { composeError, composeMessage, timestamp } from './compose.ts';
import { errorPayload } from './errors.ts';
import { counterRandom, FIXED_NOW } from './samples.testkit.ts';
import { validateMessage } from './validate.ts';

const ctx = { random: counterRandom(), now: () => FIXED_NOW };

describe('compose', () => {
  it('writes RFC 3339 UTC timestamps with a trailing Z (spec: envelope#timestamps)', () => {
    expect(timestamp(FIXED_NOW)).toBe('2025-03-14T09:26:50.000Z');
  });

  it('writes each millisecond as Date does, however the times asked for interleave (spec: envelope#timestamps)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.integer({ min: 0, max: 4 }).map((d) => FIXED_NOW + d * 3_600_001),
          { maxLength: 60 },
        ),
        (times) => {
          for (const ms of times) expect(timestamp(ms)).toBe(new Date(ms).toISOString());
        },
      ),
    );
  });

  it('takes optional members given apart over the same members of the rest, in the usual order (spec: envelope#fields)', () => {
    const msg = composeMessage(
      ctx,
      { type: 'task.status', source: 'a', target: 'b', session_id: 'Jq3c8VhQeR2m7XkT1pNw4A', task_id: 'old', payload: {} },
      { task_id: 't1', idempotency_key: undefined, metadata: { trace_id: 'x' } },
    );
    expect(Object.keys(msg).join(' ')).toBe('protocol message_id type source target timestamp session_id task_id metadata payload');
    expect(msg).toMatchObject({ session_id: 'Jq3c8VhQeR2m7XkT1pNw4A', task_id: 't1', metadata: { trace_id: 'x' } });
  });

  it('fills protocol, message_id and timestamp and omits absent members (spec: envelope#fields)', () => {
    const msg = composeMessage(ctx, {
      type: 'ping',
      source: 'a',
      target: 'b',
      session_id: 'Jq3c8VhQeR2m7XkT1pNw4A',
      task_id: undefined,
      payload: {},
    });
    expect(Object.keys(msg)).toEqual(['protocol', 'message_id', 'type', 'source', 'target', 'timestamp', 'session_id', 'payload']);
    expect(msg).toMatchObject({ protocol: 'tap/1.0', timestamp: '2025-03-14T09:26:50.000Z' });
    expect(validateMessage(msg)).toBeNull();
  });

  it('keeps given ids, and writes the protocol of the context', () => {
    const msg = composeMessage(
      { ...ctx, protocol: 'tap/1.1' },
      { type: 'ping', source: 'a', target: 'b', message_id: 'm-1', timestamp: 't', payload: {} },
    );
    expect(msg).toMatchObject({ protocol: 'tap/1.1', message_id: 'm-1', timestamp: 't' });
  });

  it('builds an error that answers the offending message (spec: errors#correlation)', () => {
    const msg = composeError(
      ctx,
      { source: 'a', target: 'b', replyTo: 'c-1', taskId: 't-1', sessionId: 'Jq3c8VhQeR2m7XkT1pNw4A' },
      errorPayload('UNKNOWN_TASK', 'no such task'),
    );
    expect(msg).toMatchObject({ type: 'error', reply_to: 'c-1', task_id: 't-1', payload: { code: 'UNKNOWN_TASK', retryable: false } });
    expect(validateMessage(msg)).toBeNull();
  });
});
