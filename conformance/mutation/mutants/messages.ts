/** Mutants that break the rules of spec/1.0/messages.md (spec: messages). */
import { type Msg, STREAM } from '../layer.ts';
import { envelope, errorOf, is, out, recode, replyTo } from '../operators.ts';
import { any, repairIn, type Row, wrongCode } from '../rows.ts';

export const rows: Row[] = [
  [
    'TAP-MSG-001:wrong-direction',
    'the agent sends a task.status',
    () => out(is('pong'), (m, v) => [m, v.make('task.status', {}, { task_id: 'probe' })]),
  ],
  [
    'TAP-MSG-002:unknown-type-wrong-code',
    'an unknown message type is refused with INVALID_MESSAGE',
    () => recode(errorOf('UNKNOWN_MESSAGE_TYPE'), 'INVALID_MESSAGE'),
  ],
  [
    'TAP-MSG-003:two-replies',
    'task.status is answered twice',
    () =>
      out(replyTo('task.status', 'task.snapshot'), (m, _v) => [
        m,
        { ...m, message_id: `${m.message_id}.2`, timestamp: new Date().toISOString() },
      ]),
  ],
  [
    'TAP-MSG-004:effects-before-reply',
    'the snapshot answering task.resume, task.cancel or plan.decision comes after the first message it causes',
    () => {
      let held: Msg | undefined;
      return out(any, (m, v) => {
        if (m.type === 'task.snapshot' && ['task.resume', 'task.cancel', 'plan.decision'].includes(String(v.answers(m)?.type))) {
          held = m;
          return null;
        }
        if (held && STREAM.has(m.type) && m.task_id === held.task_id) {
          const h = held;
          held = undefined;
          return [m, h];
        }
        return undefined;
      });
    },
  ],
  [
    'TAP-MSG-005:reply-without-task-id',
    'replies drop the task_id of their request',
    () => out(replyTo('task.status'), envelope({ task_id: undefined })),
  ],
  [
    'TAP-MSG-006:schema-not-checked',
    'an ill-formed payload is refused with MALFORMED_MESSAGE',
    wrongCode('INVALID_MESSAGE', undefined, 'MALFORMED_MESSAGE'),
  ],
  [
    'TAP-MSG-006:lowercase-timestamp',
    'a timestamp with a lowercase "t" or "z" is accepted, as RFC 3339 allows and the envelope schema does not',
    repairIn(
      (m) => typeof m.timestamp === 'string' && /[tz]/.test(m.timestamp),
      (m) => ({ ...m, timestamp: String(m.timestamp).toUpperCase() }),
    ),
  ],
];
