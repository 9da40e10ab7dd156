/** Mutants that break the rules of spec/1.0/authorization.md (spec: authorization). */
import type { Mutator } from '../layer.ts';
import { errorOf, inn, is, out, payload } from '../operators.ts';
import { fakeSnapshot, type Row, wrongCode } from '../rows.ts';

/** Remembers task ids accepted on any connection of one agent. */
function acrossSessions(): { seen: Map<string, string>; make: () => Mutator } {
  const seen = new Map<string, string>();
  return {
    seen,
    make: () => {
      let mine: string | undefined;
      return {
        out: (m, v) => {
          mine = v.sessionId;
          if (m.type === 'task.accepted' && typeof m.task_id === 'string' && mine) seen.set(m.task_id, mine);
          // A task of another session is reported instead of refused.
          if (m.type === 'error' && m.payload?.code === 'UNKNOWN_TASK' && typeof m.task_id === 'string') {
            const owner = seen.get(m.task_id);
            const to = v.answers(m);
            if (owner && owner !== mine && to) return fakeSnapshot(v, to);
          }
          return undefined;
        },
      };
    },
  };
}

export const rows: Row[] = [
  ['TAP-AUTH-001:sessions-share-principal', 'a task of another unauthenticated session is shown instead of refused', acrossSessions().make],
  ['TAP-AUTH-002:cross-principal-lookup', "another principal's task is found by its task_id", acrossSessions().make],
  [
    'TAP-AUTH-003:other-principal-distinguishable',
    "another principal's task is refused with PERMISSION_DENIED, not UNKNOWN_TASK",
    (() => {
      const across = acrossSessions();
      return () => {
        const base = across.make();
        return {
          out: (m, v, s) => {
            const r = base.out?.(m, v, s);
            if (r && typeof r === 'object' && !Array.isArray(r) && r.type === 'task.snapshot')
              return v.error(v.answers(m) ?? m, 'PERMISSION_DENIED');
            return r;
          },
        };
      };
    })(),
  ],
  [
    'TAP-AUTH-004:task-id-global',
    'a task_id in use in another session is refused with TASK_EXISTS',
    (() => {
      const seen = new Set<string>();
      return () => ({
        out: (m, v) => {
          if (m.type === 'task.accepted' && typeof m.task_id === 'string') {
            const key = m.task_id;
            const to = v.answers(m);
            if (seen.has(`${key}`) && v.memo.get(key) !== 'mine' && to) return v.error(to, 'TASK_EXISTS');
            seen.add(key);
            v.memo.set(key, 'mine');
          }
          return undefined;
        },
      });
    })(),
  ],
  [
    'TAP-AUTH-007:expired-not-first',
    'an expired grant on a guarded capability is refused with PERMISSION_DENIED',
    wrongCode('AUTHORIZATION_EXPIRED', 'task.request', 'PERMISSION_DENIED'),
  ],
  [
    'TAP-AUTH-007:expired-accepted',
    'an expired grant is taken as valid',
    () =>
      inn(
        (m) =>
          m.type === 'task.request' && typeof (m.payload?.authorization as { expires_at?: unknown } | undefined)?.expires_at === 'string',
        (m) => payload((p) => ({ ...p, authorization: { ...(p.authorization as object), expires_at: '2999-01-01T00:00:00Z' } }))(m),
      ),
  ],
  [
    'TAP-AUTH-008:permission-not-checked',
    'a guarded capability runs without its permission',
    () =>
      inn(is('task.request'), (m) => {
        const a = (m.payload?.authorization as { permissions?: string[] } | undefined) ?? {};
        if ((a.permissions ?? []).includes('tap.test.write')) return undefined;
        return payload((p) => ({ ...p, authorization: { ...a, permissions: [...(a.permissions ?? []), 'tap.test.write'] } }))(m);
      }),
  ],
  [
    'TAP-AUTH-008:no-required-detail',
    'PERMISSION_DENIED without details.required',
    () =>
      out(
        errorOf('PERMISSION_DENIED'),
        payload((p) => ({ ...p, details: {} })),
      ),
  ],
  [
    'TAP-AUTH-009:auth-required-elsewhere',
    'PERMISSION_DENIED is sent as AUTH_REQUIRED',
    wrongCode('PERMISSION_DENIED', 'task.request', 'AUTH_REQUIRED'),
  ],
  [
    'TAP-AUTH-002:key-across-capabilities',
    'idempotency records are keyed by principal and key only: a key used for a second capability answers with the first task',
    () => {
      const first = new Map<string, Record<string, unknown>>();
      // The layer hands the agent the first request's payload again, so that the agent's own record answers it.
      return inn(
        (m) => m.type === 'task.request' && typeof m.idempotency_key === 'string',
        (m) => {
          const key = m.idempotency_key as string;
          const earlier = first.get(key);
          if (!earlier) {
            first.set(key, m.payload ?? {});
            return undefined;
          }
          return earlier.capability === m.payload?.capability ? undefined : { ...m, payload: earlier };
        },
      );
    },
  ],
];
