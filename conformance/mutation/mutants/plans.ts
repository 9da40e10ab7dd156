/** Mutants that break the rules of spec/1.0/plans.md (spec: plans). */
import { answerInstead, both, dropFromStream, inn, is, join, out, payload, requestFor, stateEvent } from '../operators.ts';
import { refuseOnceSeen, type Row, wrongCode } from '../rows.ts';

export const rows: Row[] = [
  [
    'TAP-PLAN-001:effect-before-approval',
    'the plan runs before its approval',
    () => answerInstead(both(is('task.request'), requestFor('tap.test.plan')), (m, v) => v.error(m, 'INTERNAL_ERROR')),
  ],
  [
    'TAP-PLAN-002:plan-from-accepted',
    'plan.submit is sent without the running event before it',
    () => dropFromStream(both(stateEvent('running'), (m, v) => v.memo.get(`plan:${m.task_id}`) !== undefined || true)),
  ],
  [
    'TAP-PLAN-003:plan-id-reused',
    'a revised plan reuses the plan_id of the plan it revises',
    () =>
      out(
        (m) => m.type === 'plan.submit' && typeof m.payload?.revision_of === 'string',
        (m) => payload((p) => ({ ...p, plan: { ...(p.plan as object), plan_id: p.revision_of } }))(m),
      ),
  ],
  [
    'TAP-PLAN-004:not-withdrawn',
    'a task ended with a pending plan leaves the plan pending',
    () =>
      out(
        (m) => m.type === 'task.snapshot' && (m.payload?.plan as { state?: string } | undefined)?.state === 'withdrawn',
        payload((p) => ({ ...p, plan: { ...(p.plan as object), state: 'pending' } })),
      ),
  ],
  [
    'TAP-PLAN-005:terminal-after-plan-check',
    'a decision for a terminal task is answered PROTOCOL_VIOLATION',
    wrongCode('TASK_TERMINAL', 'plan.decision', 'PROTOCOL_VIOLATION'),
  ],
  [
    'TAP-PLAN-006:wrong-plan-accepted',
    'a decision for another plan is refused with UNKNOWN_TASK',
    wrongCode('PROTOCOL_VIOLATION', 'plan.decision', 'UNKNOWN_TASK'),
  ],
  [
    'TAP-PLAN-007:holding-refused',
    'a decision for a holding plan is refused',
    refuseOnceSeen({
      seen: (m) => m.type === 'task.event' && m.payload?.kind === 'progress' && String(m.payload?.stage ?? '').includes('holding'),
      cleared: is('plan.submit'),
      refused: is('plan.decision'),
      code: 'PROTOCOL_VIOLATION',
    }),
  ],
  [
    'TAP-PLAN-008:no-running-after-approval',
    'no state event into running follows the approval',
    () => {
      const approved = new Set<string>();
      return join(
        inn(is('plan.decision'), (m) => {
          if (m.payload?.decision === 'approved') approved.add(m.task_id as string);
          return undefined;
        }),
        dropFromStream((m) => m.type === 'task.event' && m.payload?.state === 'running' && approved.has(m.task_id as string)),
      );
    },
  ],
  [
    'TAP-PLAN-009:rejected-completes',
    'a rejected plan ends the task cancelled',
    () =>
      out(
        (m) => m.type === 'task.result' && (m.payload?.error as { code?: string } | undefined)?.code === 'PLAN_REJECTED',
        payload({ status: 'cancelled', error: undefined }),
      ),
  ],
  [
    'TAP-PLAN-010:revision-without-revision-of',
    'a revised plan does not name the plan it revises',
    () =>
      out(
        (m) => m.type === 'plan.submit' && m.payload?.revision_of !== undefined,
        payload((p) => ({ ...p, revision_of: undefined })),
      ),
  ],
  [
    'TAP-PLAN-011:plan-changes',
    'the approved plan changes in the snapshot while it runs',
    () =>
      out(
        (m) => m.type === 'task.snapshot' && (m.payload?.plan as { state?: string } | undefined)?.state === 'approved',
        payload((p) => ({
          ...p,
          plan: { ...(p.plan as object), plan: { ...((p.plan as { plan?: object }).plan ?? {}), summary: 'something else' } },
        })),
      ),
  ],
  [
    'TAP-PLAN-012:deadline-not-checked',
    'a step runs after the deadline; the task ends completed',
    () =>
      out(
        (m) => m.type === 'task.result' && m.payload?.status === 'timed_out',
        payload({ status: 'completed', error: undefined, output: {} }),
      ),
  ],
  [
    'TAP-PLAN-013:no-holding',
    'no holding reminder is sent',
    () => dropFromStream((m) => m.type === 'task.event' && m.payload?.kind === 'progress'),
  ],
  [
    'TAP-PLAN-016:decides-for-requester',
    'a plan left undecided is approved by the agent once it holds',
    () => {
      const plans = new Map<string, string>();
      const injected = new Set<string>();
      return {
        out: (m, v) => {
          if (m.type === 'plan.submit' && typeof m.task_id === 'string')
            plans.set(m.task_id, String((m.payload?.plan as { plan_id?: string } | undefined)?.plan_id));
          if (typeof m.reply_to === 'string' && injected.has(m.reply_to)) return null;
          const holding = m.type === 'task.event' && m.payload?.kind === 'progress' && m.payload.stage === 'plan.holding';
          const planId = typeof m.task_id === 'string' ? plans.get(m.task_id) : undefined;
          if (holding && planId) {
            plans.delete(m.task_id as string);
            const decision = v.makeIn('plan.decision', { plan_id: planId, decision: 'approved' }, { task_id: m.task_id });
            injected.add(decision.message_id as string);
            setImmediate(() => v.inject(decision));
          }
          return undefined;
        },
      };
    },
  ],
];
