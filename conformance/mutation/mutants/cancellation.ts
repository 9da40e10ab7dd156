/** Mutants that break the rules of spec/1.0/cancellation.md (spec: cancellation). */
import { delayOut, dropFromStream, dropOut, errorOf, inn, is, next, out, payload, replyTo, resultOf, stateEvent } from '../operators.ts';
import { any, fakeSnapshot, refuseOnceSeen, type Row } from '../rows.ts';

export const rows: Row[] = [
  ['TAP-CAN-001:accepted-not-cancelled', 'a cancel of an accepted task never ends it', () => dropOut(resultOf('cancelled'))],
  [
    'TAP-CAN-002:no-cancelling-event',
    'a cancel of a running task sends no state event into cancelling',
    () => dropFromStream(stateEvent('cancelling')),
  ],
  ['TAP-CAN-002:no-snapshot', 'a cancel is not answered with a snapshot', () => out(replyTo('task.cancel', 'task.snapshot'), () => null)],
  [
    'TAP-CAN-003:cancelled-as-failed',
    'a cancelled task ends failed',
    () =>
      out(resultOf('cancelled'), (m) =>
        m.payload?.error
          ? undefined
          : payload({ status: 'failed', error: { code: 'INTERNAL_ERROR', message: 'cancelled', retryable: false } })(m),
      ),
  ],
  [
    'TAP-CAN-004:work-goes-on',
    'output events go on after cancelling',
    () => {
      const cancelling = new Set<string>();
      return out(any, (m, v, send) => {
        if (m.type === 'task.event' && m.payload?.state === 'cancelling') cancelling.add(m.task_id as string);
        if (m.type === 'task.result' && cancelling.has(m.task_id as string)) {
          const extra = next({ ...m, sequence: (m.sequence as number) - 1 }, v, 'task.event', { kind: 'output', data: 'more work' });
          send({ ...m, sequence: (m.sequence as number) + 1 });
          return extra;
        }
        return undefined;
      });
    },
  ],
  [
    'TAP-CAN-005:repeat-cancel-effect',
    'a repeated cancel is refused',
    () => {
      const cancelled = new Set<string>();
      return inn(is('task.cancel'), (m, v, answer) => {
        const id = m.task_id as string;
        if (!cancelled.has(id)) {
          cancelled.add(id);
          return undefined;
        }
        answer(v.error(m, 'TASK_TERMINAL'));
        return null;
      });
    },
  ],
  [
    'TAP-CAN-006:cancel-after-cancelled',
    'a cancel of a cancelled task is refused with TASK_TERMINAL',
    refuseOnceSeen({
      seen: (m) => m.type === 'task.result' && m.payload?.status === 'cancelled',
      refused: is('task.cancel'),
      code: 'TASK_TERMINAL',
    }),
  ],
  [
    'TAP-CAN-007:terminal-cancel-snapshot',
    'a cancel of a completed task is answered with a snapshot',
    () => out(errorOf('TASK_TERMINAL', 'task.cancel'), (m, v) => fakeSnapshot(v, v.answers(m)!, 'completed')),
  ],
  ['TAP-CAN-008:slow-result', 'the result after a cancel comes 20 s late', () => delayOut(resultOf('cancelled'), 20_000)],
];
