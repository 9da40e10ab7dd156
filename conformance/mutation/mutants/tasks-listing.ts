/**
 * Mutants that break the rules of Listing tasks, TAP 1.1, in spec/1.1/tasks.md (spec: tasks#listing):
 * a table of its own beside tasks.ts, which holds the rest of the chapter.
 */
import type { Msg } from '../layer.ts';
import { errorOf, inn, is, out, payload } from '../operators.ts';
import type { Row } from '../rows.ts';

export const rows: Row[] = [
  [
    'TAP-LIST-101:lists-other-principals',
    "a task.page also lists the tasks accepted on the agent's other connections",
    (() => {
      const accepted: Array<{ from: object; summary: Record<string, unknown> }> = [];
      return () => {
        const me = {};
        return {
          out: (m: Msg) => {
            if (m.type === 'task.accepted') {
              const at = String(m.timestamp);
              const summary = {
                task_id: m.task_id,
                capability: m.payload?.capability,
                state: 'accepted',
                created_at: at,
                updated_at: at,
                last_sequence: 1,
              };
              accepted.push({ from: me, summary });
            }
            if (m.type !== 'task.page') return undefined;
            const tasks = m.payload?.tasks as unknown[];
            const others = accepted.filter((a) => a.from !== me).map((a) => a.summary);
            return payload({ tasks: [...tasks, ...others].slice(0, 100) })(m);
          },
        };
      };
    })(),
  ],
  [
    'TAP-LIST-102:filter-ignored',
    'task.list lists every task, whatever its state and capability filter',
    () => inn(is('task.list'), (m) => payload((p) => ({ ...p, state: undefined, capability: undefined }))(m)),
  ],
  [
    'TAP-LIST-103:stale-sequence',
    'a task.page shows every task with last_sequence 1, as if it had sent nothing since task.accepted',
    () =>
      out(
        is('task.page'),
        payload((p) => ({ ...p, tasks: (p.tasks as Array<Record<string, unknown>>).map((t) => ({ ...t, last_sequence: 1 })) })),
      ),
  ],
  [
    'TAP-LIST-104:skips-after-cursor',
    'a page that follows a cursor leaves out its first task',
    () =>
      out(
        (m, v) => m.type === 'task.page' && v.answers(m)?.payload?.cursor !== undefined,
        payload((p) => ({ ...p, tasks: (p.tasks as unknown[]).slice(1) })),
      ),
  ],
  [
    'TAP-LIST-105:no-next-cursor',
    'a task.page never carries next_cursor, though more tasks follow',
    () =>
      out(
        is('task.page'),
        payload((p) => ({ ...p, next_cursor: undefined })),
      ),
  ],
  [
    'TAP-LIST-105:over-limit',
    'a full task.page holds one task more than the limit (its first, again)',
    () =>
      out(is('task.page'), (m, v) => {
        const tasks = m.payload?.tasks as unknown[];
        const limit = v.answers(m)?.payload?.limit;
        return tasks.length > 0 && tasks.length === limit ? payload({ tasks: [...tasks, tasks[0]] })(m) : undefined;
      }),
  ],
  [
    'TAP-LIST-106:cursor-not-checked',
    'a cursor the agent cannot use gets an empty task.page instead of INVALID_CURSOR',
    () => out(errorOf('INVALID_CURSOR', 'task.list'), (m, v) => v.make('task.page', { tasks: [] }, { reply_to: m.reply_to })),
  ],
  [
    'TAP-LIST-108:lists-in-1-0',
    'in a session of 1.0, task.list is answered with an empty task.page',
    () =>
      out(
        (m, v) => v.version === '1.0' && errorOf('UNKNOWN_MESSAGE_TYPE', 'task.list')(m, v),
        (m, v) => v.make('task.page', { tasks: [] }, { reply_to: m.reply_to }),
      ),
  ],
];
