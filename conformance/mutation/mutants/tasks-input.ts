/**
 * Mutants that break the rules TAP 1.1 adds to the tasks chapter for input required
 * (spec/1.1/tasks.md, spec: tasks#input-required); a table of its own beside tasks.ts, which
 * holds those of spec/1.0/tasks.md.
 */
import type { Mutator, View } from '../layer.ts';
import { dropFromStream, errorOf, is, out, payload, resultOf, stateEvent } from '../operators.ts';
import { type Row, wrongCode } from '../rows.ts';

/** The tasks of one connection that sent an input.request (kept in the view's memo). */
function asked(v: View): Set<unknown> {
  let set = v.memo.get('input:asked') as Set<unknown> | undefined;
  if (!set) v.memo.set('input:asked', (set = new Set()));
  return set;
}

/** Drops the state event into `state` of a task that asked for input, once it asked. */
function dropAfterAsking(state: string): () => Mutator {
  return () =>
    dropFromStream((m, v) => {
      if (m.type === 'input.request') asked(v).add(m.task_id);
      return stateEvent(state)(m, v) && asked(v).has(m.task_id);
    });
}

export const rows: Row[] = [
  [
    'TAP-INPUT-101:no-state-event',
    'input.request comes without the state event input_required before it',
    () => dropFromStream(stateEvent('input_required')),
  ],
  [
    'TAP-INPUT-102:other-code-in-1-0',
    'in a session of 1.0 a task that needs input ends failed INTERNAL_ERROR',
    () =>
      out(
        (m) => m.type === 'task.result' && (m.payload?.error as { code?: string } | undefined)?.code === 'CAPABILITY_NOT_SUPPORTED',
        payload((p) => ({ ...p, error: { ...(p.error as object), code: 'INTERNAL_ERROR' } })),
      ),
  ],
  [
    'TAP-INPUT-103:terminal-after-request-check',
    'an answer for a terminal task is answered PROTOCOL_VIOLATION',
    wrongCode('TASK_TERMINAL', 'input.response', 'PROTOCOL_VIOLATION'),
  ],
  [
    'TAP-INPUT-104:not-waiting-unknown',
    'an answer for a task that waits for no input is refused with UNKNOWN_TASK',
    wrongCode('PROTOCOL_VIOLATION', 'input.response', 'UNKNOWN_TASK'),
  ],
  [
    'TAP-INPUT-105:invalid-answer-code',
    'an answer that fails the schema is refused with INVALID_MESSAGE',
    wrongCode('INVALID_ANSWER', 'input.response', 'INVALID_MESSAGE'),
  ],
  ['TAP-INPUT-106:no-running-after-answer', 'no state event into running follows an answer', dropAfterAsking('running')],
  [
    'TAP-INPUT-107:ends-on-refused-answer',
    'the agent cancels a waiting task on its own once it refused an answer',
    () => {
      const injected = new Set<string>();
      return {
        out: (m, v) => {
          // The reply to the cancel the layer made goes to no one.
          if (typeof m.reply_to === 'string' && injected.has(m.reply_to)) return null;
          if (errorOf('INVALID_ANSWER', 'input.response')(m, v)) {
            const cancel = v.makeIn('task.cancel', { reason: 'the answer was wrong' }, { task_id: m.task_id });
            injected.add(cancel.message_id as string);
            setImmediate(() => v.inject(cancel));
          }
          return undefined;
        },
      };
    },
  ],
  [
    'TAP-INPUT-108:deadline-fails',
    'a waiting task past its deadline ends failed INTERNAL_ERROR instead of timed_out',
    () =>
      out(
        (m, v) => {
          if (m.type === 'input.request') asked(v).add(m.task_id);
          return resultOf('timed_out')(m, v) && asked(v).has(m.task_id);
        },
        payload((p) => ({ ...p, status: 'failed', error: { ...(p.error as object), code: 'INTERNAL_ERROR' } })),
      ),
  ],
  [
    'TAP-INPUT-109:cancel-skips-cancelling',
    'a waiting task is cancelled without the state event cancelling',
    dropAfterAsking('cancelling'),
  ],
  [
    'TAP-INPUT-110:snapshot-without-request',
    'snapshots of a waiting task do not name its pending request',
    () =>
      out(
        is('task.snapshot'),
        payload((p) => ({ ...p, input_request: undefined })),
      ),
  ],
];
