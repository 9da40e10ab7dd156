/** plans profile, Late decisions (spec: plans#holding). */
import type { CaseContext } from '../../context.ts';
import {
  between,
  fail,
  judgeOccurrence,
  judgePunctuality,
  type Observed,
  type Outcome,
  pass,
  skipped,
  timingWindow,
} from '../../verdict.ts';
import { collectUntilResult, describeMessage, startTask, waitStream } from '../../steps.ts';
import { cutShort, limitRanOut, PLAN, show, status, wrongReply } from '../kit.ts';
import type { Received } from '../../peer.ts';
import { type Case, defineCase } from '../../case.ts';
import { timedCases } from '../timing.ts';
import { PLAN_CAP } from './kit.ts';
import { HEARTBEAT_HINT, MAX_HEARTBEAT } from '../liveness.ts';

/** The late-decision scenario: when does the first plan.holding reminder come, and the second? */
async function holdingScenario(
  ctx: CaseContext,
): Promise<{ first?: Observed; second?: Observed; heartbeat: number; problem?: Outcome; afterDecision?: Outcome | null; cut?: Outcome }> {
  const requestTimeout = 1000;
  const s = await ctx.session({ params: { request_timeout_ms: requestTimeout, heartbeat_ms: 1000 } });
  if (!s.ok) return { heartbeat: 0, problem: s.outcome };
  const peer = s.value;
  const heartbeat = Number(peer.state.params?.heartbeat_ms);
  const requested = Date.now();
  const requestedAt = ctx.transcript.now();
  const t = await startTask(peer, 'tap.test.plan', { plan: PLAN });
  if (!t.ok) return { heartbeat, problem: t.outcome };
  const submit = await waitStream(peer, t.value.taskId, (m) => m.type === 'plan.submit', 'plan.submit');
  if (!submit.ok) return { heartbeat, problem: submit.outcome };
  const t0 = Date.now();
  const isReminder = (r: Received) =>
    r.msg.task_id === t.value.taskId &&
    r.msg.type === 'task.event' &&
    r.msg.payload?.kind === 'progress' &&
    r.msg.payload.stage === 'plan.holding';
  const w1 = timingWindow(requestTimeout, ctx.env.timeScale);
  const first = await peer.poll(isReminder, w1.latestMs + 200);
  // plan.submit was sent between our request and its arrival.
  const firstNow = Date.now();
  const firstAt = first ? between(firstNow - t0, firstNow - requested) : undefined;
  let secondAt: Observed;
  if (first && heartbeat <= 10_000) {
    const w2 = timingWindow(heartbeat, ctx.env.timeScale);
    const second = await peer.poll((r) => isReminder(r) && r.index > first.index, w2.latestMs + 200);
    // From the arrival of the first reminder, as the transport stamped it (when the harness woke to
    // see it does not count), to the arrival of the second; but the first may have spent time in
    // transit (a mailbox is read every few hundred ms), so the agent may have sent it as early as
    // request_timeout_ms after our request: the interval is known to be no longer than that.
    secondAt = second ? between(second.at - first.at, second.at - (requestedAt + requestTimeout)) : undefined;
  }
  // Still waiting for us: no decision taken on our behalf; a decision for the holding plan is taken.
  const snap = await status(peer, t.value.taskId);
  let afterDecision: Outcome | null = null;
  // A task its own max_task_seconds ended: what came before it (the first reminder) is judged, the rest cannot be.
  if (snap.ok && snap.value.msg.type === 'task.snapshot' && snap.value.msg.payload.state === 'timed_out') {
    const cut = cutShort(peer, 'its plan held past request_timeout_ms and two reminders');
    return { first: firstAt, second: secondAt, heartbeat, afterDecision: cut, cut };
  }
  if (!snap.ok) afterDecision = snap.outcome;
  else if (snap.value.msg.type !== 'task.snapshot' || snap.value.msg.payload.state !== 'awaiting_approval') {
    afterDecision = fail(
      'the late plan was decided or ended without the requester',
      'awaiting_approval, plan holding',
      describeMessage(snap.value.msg),
    );
  } else {
    const planId = submit.value.msg.payload.plan?.plan_id;
    const planState = snap.value.msg.payload.plan?.state;
    const d = await peer.post(
      'plan.decision',
      { plan_id: planId, decision: 'approved', feedback: 'late but fine' },
      { task_id: t.value.taskId },
    );
    const reply = await peer.reply(d);
    const r = reply.ok ? await collectUntilResult(peer, t.value.taskId) : reply;
    // The snapshot said awaiting_approval, but the agent's max_task_seconds ran out before the late
    // approval came (a loaded machine): the task ended timed_out, as the agent's own limit asks.
    const endedTimedOut =
      (reply.ok && reply.value.msg.type === 'error' && reply.value.msg.payload?.code === 'TASK_TERMINAL') ||
      (r.ok && r.value.result.msg.payload.status === 'timed_out');
    if (endedTimedOut && limitRanOut(peer, requested)) {
      const cut = cutShort(peer, 'the late approval of its holding plan came');
      return { first: firstAt, second: secondAt, heartbeat, afterDecision: cut, cut };
    }
    afterDecision =
      (planState !== 'holding'
        ? fail(
            'the snapshot of a plan past request_timeout_ms does not show it holding',
            'plan.state holding',
            show(snap.value.msg.payload.plan),
          )
        : null) ??
      (!reply.ok
        ? reply.outcome
        : reply.value.msg.type !== 'task.snapshot'
          ? wrongReply('a decision for a holding plan', 'task.snapshot', reply.value.msg)
          : null) ??
      (!r.ok
        ? r.outcome
        : r.value.result.msg.payload.status !== 'completed'
          ? fail('an approved holding plan did not run to completion', 'completed', describeMessage(r.value.result.msg))
          : null);
  }
  return { first: firstAt, second: secondAt, heartbeat, afterDecision };
}

export const cases: Case[] = [
  ...timedCases({
    profile: 'plans',
    needs: PLAN_CAP,
    budgetMs: 45_000,
    key: 'plan-holding',
    observe: holdingScenario,
    nominalMs: 1000,
    at: (r) => r.first,
    what: 'the first plan.holding reminder',
    occurrence: {
      id: 'plans.holding.first-reminder',
      title: 'A plan with no decision after request_timeout_ms becomes holding with a first plan.holding reminder, never earlier',
      requirements: ['TAP-PLAN-013'],
      what: 'the first plan.holding reminder (request_timeout_ms 1000)',
    },
    punctuality: {
      id: 'plans.holding.punctual',
      title: 'The first plan.holding reminder comes punctually',
      requirements: ['TAP-PLAN-014'],
    },
  }),
  defineCase({
    id: 'plans.holding.repeat',
    title: 'The plan.holding reminder repeats every heartbeat_ms while the plan is holding',
    profile: 'plans',
    requirements: ['TAP-PLAN-015'],
    needs: PLAN_CAP,
    budgetMs: 45_000,
    run: async (ctx) => {
      const r = await ctx.shared('plan-holding', holdingScenario);
      if (r.problem) return r.problem;
      if (r.first === undefined) return fail('no first reminder, so no repeat', 'a reminder every heartbeat_ms', 'none');
      if (r.second === undefined && r.cut) return r.cut;
      if (r.heartbeat > MAX_HEARTBEAT)
        return skipped(`heartbeat_ms is ${r.heartbeat}; a repeat that far apart is not waited for. ${HEARTBEAT_HINT}`);
      const w = timingWindow(r.heartbeat, ctx.env.timeScale);
      const o = judgeOccurrence(w, r.second, `the second plan.holding reminder (heartbeat_ms ${r.heartbeat})`);
      return o.verdict === 'PASS' ? judgePunctuality(w, r.second, 'the second plan.holding reminder') : o;
    },
  }),
  defineCase({
    id: 'plans.holding.never-decides',
    title: 'A late plan is never decided for the requester, and a decision for a holding plan is taken like one for a pending plan',
    profile: 'plans',
    requirements: ['TAP-PLAN-016', 'TAP-PLAN-007'],
    needs: PLAN_CAP,
    budgetMs: 45_000,
    run: async (ctx) => {
      const r = await ctx.shared('plan-holding', holdingScenario);
      if (r.problem) return r.problem;
      return r.afterDecision ?? pass('still awaiting the requester; the late approval was taken');
    },
  }),
];
