/** The farewell of a shutdown, checked the same way in the shutdown and stdio profiles (spec: shutdown#shutdown-sequence). */
import type { Peer, Received } from '../peer.ts';
import { fail, type Outcome } from '../verdict.ts';
import { show } from './kit.ts';
import { describeMessage } from '../steps.ts';

/**
 * Checks the end of a session with unfinished tasks: each gets its ordinary result, or a hand-off
 * then (cancelling then) cancelled with SHUTTING_DOWN, all before the farewell, and nothing after it.
 */
export function checkSequence(peer: Peer, taskIds: string[], farewell: Received): Outcome | null {
  for (const id of taskIds) {
    const stream = peer.received.filter((r) => !r.resent && r.msg.task_id === id && r.msg.sequence !== undefined);
    const result = stream.find((r) => r.msg.type === 'task.result');
    if (!result) return fail(`task ${id} got no task.result before the session ended`, 'a result for every task', 'none');
    if (result.index > farewell.index)
      return fail(`the result of ${id} came after session.farewell`, 'every result before the farewell', 'after');
    const handoff = stream.find((r) => r.msg.type === 'task.handoff');
    const p = result.msg.payload;
    if (handoff) {
      const h = handoff.msg.payload;
      const shaped =
        h &&
        typeof h.checkpoint === 'object' &&
        Array.isArray(h.completed_steps) &&
        Array.isArray(h.remaining_steps) &&
        typeof h.resume_hint === 'string';
      if (!shaped)
        return fail(
          `the hand-off of ${id} lacks checkpoint, completed_steps, remaining_steps or resume_hint`,
          'a complete task.handoff',
          show(h),
        );
      if (handoff.index > result.index)
        return fail(`the hand-off of ${id} came after its result`, 'task.handoff, then the result', 'result first');
      if (p.status !== 'cancelled' || p.error?.code !== 'SHUTTING_DOWN' || typeof p.error?.retryable !== 'boolean') {
        return fail(
          `after its hand-off, ${id} did not end cancelled with SHUTTING_DOWN`,
          'task.result cancelled, error SHUTTING_DOWN',
          describeMessage(result.msg),
        );
      }
      // Retryable by default; not retryable when a retry could repeat a side effect, and then the
      // error carries the checkpoint (spec: idempotency#retries, TAP-IDEM-012).
      if (p.error.retryable === false && typeof p.error.details?.checkpoint !== 'object') {
        return fail(
          `${id} ended with a non-retryable SHUTTING_DOWN whose error carries no checkpoint`,
          'retryable: true, or retryable: false with error.details.checkpoint (TAP-IDEM-012)',
          show(p.error),
        );
      }
    } else if (p.status === 'cancelled' && p.error?.code === 'SHUTTING_DOWN') {
      return fail(
        `${id} ended by the shutdown without a task.handoff`,
        'task.handoff before the SHUTTING_DOWN result',
        describeMessage(result.msg),
      );
    }
  }
  const after = peer.received.find((r) => r.index > farewell.index && r.conn === farewell.conn && !r.resent);
  if (after)
    return fail(
      `the agent sent ${describeMessage(after.msg)} after its session.farewell`,
      'nothing after the farewell',
      describeMessage(after.msg),
    );
  return null;
}
