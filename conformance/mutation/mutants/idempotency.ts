/** Mutants that break the rules of spec/1.0/idempotency.md (spec: idempotency). */
import type { Msg } from '../layer.ts';
import { inn, is, out, replyTo } from '../operators.ts';
import { any, fakeSnapshot, forgetDuplicates, type Row, wrongCode } from '../rows.ts';

export const rows: Row[] = [
  [
    'TAP-IDEM-001:duplicate-reexecuted',
    'a duplicate task.request is run again under a new task',
    () => {
      const seen = new Set<string>();
      return inn(is('task.request', 'task.status', 'ping'), (m, v, answer) => {
        const id = m.message_id as string;
        if (!seen.has(id)) {
          seen.add(id);
          return undefined;
        }
        if (m.type === 'ping') {
          answer(v.make('pong', {}, { reply_to: id }));
          return null;
        }
        return { ...m, message_id: `${id}.again` };
      });
    },
  ],
  [
    'TAP-IDEM-001:duplicate-reply-changed',
    'the reply to a duplicate is a fresh message, not the original',
    () => {
      const seen = new Set<string>();
      return inn(any, (m) => {
        const id = m.message_id as string;
        if (!seen.has(id)) {
          seen.add(id);
          return undefined;
        }
        return m.type === 'ping' || m.type === 'task.status' ? { ...m, message_id: `${id}.again` } : undefined;
      });
    },
  ],
  [
    'TAP-IDEM-004:short-memory',
    'only the last 8 message ids are remembered',
    () => {
      const order: string[] = [];
      const first = new Set<string>();
      return inn(any, (m) => {
        const id = m.message_id as string;
        if (first.has(id) && !order.slice(-8).includes(id)) return { ...m, message_id: `${id}.forgotten` };
        if (!first.has(id)) {
          first.add(id);
          order.push(id);
        }
        return undefined;
      });
    },
  ],
  [
    'TAP-IDEM-005:key-ignored',
    'a task.request repeating an idempotency key starts a new task',
    () =>
      inn(
        (m) => m.type === 'task.request' && typeof m.idempotency_key === 'string',
        (m) => ({ ...m, idempotency_key: `${m.idempotency_key}.${m.task_id}` }),
      ),
  ],
  [
    'TAP-IDEM-006:conflict-ignored',
    'a different request under a used key is answered TASK_EXISTS',
    wrongCode('IDEMPOTENCY_CONFLICT', 'task.request', 'TASK_EXISTS'),
  ],
  [
    'TAP-IDEM-007:repeat-not-reauthorized',
    'a repeat under a key is answered with a snapshot whatever its authorization',
    () => {
      const snaps = new Map<string, Msg>();
      return {
        out: (m, v) => {
          const to = v.answers(m);
          if (to?.type !== 'task.request' || typeof to.idempotency_key !== 'string') return undefined;
          if (m.type === 'task.snapshot' || m.type === 'task.accepted') snaps.set(to.idempotency_key, m);
          const known = snaps.get(to.idempotency_key);
          if (m.type === 'error' && known && (m.payload?.code === 'PERMISSION_DENIED' || m.payload?.code === 'AUTHORIZATION_EXPIRED'))
            return fakeSnapshot(v, to, 'completed');
          return undefined;
        },
      };
    },
  ],
  [
    'TAP-IDEM-008:same-task-id-new-task',
    'a repeat of a task.request under its task_id is refused with TASK_EXISTS',
    () =>
      out(replyTo('task.request', 'task.snapshot'), (m, v) =>
        v.answers(m)?.idempotency_key === undefined ? v.error(v.answers(m)!, 'TASK_EXISTS') : undefined,
      ),
  ],
  [
    'TAP-IDEM-009:task-exists-as-conflict',
    'TASK_EXISTS is sent as IDEMPOTENCY_CONFLICT',
    wrongCode('TASK_EXISTS', 'task.request', 'IDEMPOTENCY_CONFLICT'),
  ],
  [
    'TAP-IDEM-010:record-kept',
    'a retryable ending keeps the idempotency record',
    () => {
      const done = new Map<string, Msg>();
      return {
        out: (m, v) => {
          const to = v.answers(m);
          if (m.type === 'task.accepted' && to && typeof to.idempotency_key === 'string') done.set(to.idempotency_key, to);
          return undefined;
        },
        in: (m, v, answer) => {
          if (m.type !== 'task.request' || typeof m.idempotency_key !== 'string') return undefined;
          const first = done.get(m.idempotency_key);
          if (!first || first.task_id === m.task_id) return undefined;
          answer(fakeSnapshot(v, { ...m, task_id: first.task_id }, 'failed'));
          return null;
        },
      };
    },
  ],
  [
    'TAP-IDEM-015:record-forgotten',
    'an idempotency record is forgotten once the task ends',
    () =>
      inn(
        (m) => m.type === 'task.request' && typeof m.idempotency_key === 'string',
        (m, v) => {
          const n = ((v.memo.get(`k:${m.idempotency_key}`) as number | undefined) ?? 0) + 1;
          v.memo.set(`k:${m.idempotency_key}`, n);
          return n > 1 && m.payload ? { ...m, idempotency_key: `${m.idempotency_key}#${n}` } : undefined;
        },
      ),
  ],
  [
    'TAP-IDEM-016:repeated-init-refused',
    'a byte-identical repeat of the opening init is refused',
    () => {
      let init: string | undefined;
      return inn(is('handshake.init'), (m, v, answer) => {
        const text = JSON.stringify(m);
        if (init === undefined) {
          init = text;
          return undefined;
        }
        if (text !== init) return undefined;
        answer(v.error(m, 'PROTOCOL_VIOLATION'));
        return null;
      });
    },
  ],
  [
    'TAP-IDEM-002:per-connection-duplicates',
    'duplicate detection stops at the connection: a message repeated on another connection of the session is taken as new',
    forgetDuplicates(() => true, { acrossConnections: true }),
  ],
  [
    'TAP-IDEM-040:repeat-version-checked',
    'a byte-identical repeat of the opening init in a newer minor gets UNSUPPORTED_VERSION',
    () =>
      out(
        (m, v) => m.type === 'handshake.ack' && v.agent !== undefined && v.answers(m)?.protocol !== `tap/${v.version}`,
        (m, v) => v.error(v.answers(m)!, 'UNSUPPORTED_VERSION', { details: { supported: ['1.0'] } }),
      ),
  ],
];
