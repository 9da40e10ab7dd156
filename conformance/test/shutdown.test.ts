import { describe, expect, it } from 'vitest';
import { checkSequence } from '../cases/farewell.ts';
import type { Peer, Received } from '../peer.ts';

/** The messages of one handed-off task and the farewell, as a peer would have received them. */
function ended(error: Record<string, unknown>): { peer: Peer; farewell: Received } {
  const msgs = [
    {
      type: 'task.handoff',
      task_id: 't1',
      sequence: 3,
      payload: { checkpoint: {}, completed_steps: [], remaining_steps: ['b'], resume_hint: 'go on' },
    },
    {
      type: 'task.result',
      task_id: 't1',
      sequence: 4,
      payload: { status: 'cancelled', error: { code: 'SHUTTING_DOWN', message: 'bye', ...error } },
    },
    { type: 'session.farewell', payload: { reason: 'bye' } },
  ];
  const received = msgs.map((msg, index) => ({ index, at: index, conn: 1, text: '', msg, resent: false }) as unknown as Received);
  return { peer: { received } as unknown as Peer, farewell: received[2]! };
}

describe('checkSequence (spec: shutdown#shutdown-sequence, idempotency#retries)', () => {
  it('accepts a handed-off task ended with a retryable SHUTTING_DOWN', () => {
    const { peer, farewell } = ended({ retryable: true });
    expect(checkSequence(peer, ['t1'], farewell)).toBeNull();
  });

  it('accepts retryable false with the checkpoint, for a task whose retry could repeat a side effect (TAP-IDEM-012)', () => {
    const { peer, farewell } = ended({ retryable: false, details: { checkpoint: { step: 'a' } } });
    expect(checkSequence(peer, ['t1'], farewell)).toBeNull();
  });

  it('fails retryable false without the checkpoint TAP-IDEM-012 requires', () => {
    const { peer, farewell } = ended({ retryable: false });
    expect(checkSequence(peer, ['t1'], farewell)?.detail).toMatch(/non-retryable SHUTTING_DOWN whose error carries no checkpoint/);
  });
});
