/** Plans and approval profile: submission, decisions, revisions, late decisions (spec: plans). */
import { defineCase, type Case } from '../case.ts';
import type { CaseContext } from '../context.ts';
import type { Peer, Received } from '../peer.ts';
import { collectUntilResult, describeMessage, startTask, waitStream } from '../steps.ts';
import { between, fail, judgeOccurrence, judgePunctuality, pass, skipped, timingWindow, type Observed, type Outcome } from '../verdict.ts';
import { check, checkError, expectNothing, jsonEqual, need, outputsOf, show, status, verdictOf, wrongReply } from './kit.ts';

const P = 'plans' as const;
const PLAN_CAP = { capabilities: ['tap.test.plan'] };

/** The plan the harness asks tap.test.plan to submit (a draft: no plan_id). */
export const PLAN = {
  intent: 'Write and publish two files for the conformance check.',
  steps: [
    { action: 'write', target: 'out/a.txt', expected_output: 'a file', reversible: true },
    { action: 'publish', target: 'wiki://conformance/a', expected_output: 'a page revision', reversible: false },
  ],
  rollback: 'Delete the file and restore the previous page revision.',
  estimated_cost: { tokens: 10, seconds: 1 },
  risk_level: 'low',
};

/** Starts a plan task and waits for its plan.submit. */
async function submitted(peer: Peer, timeoutMs?: number): Promise<{ taskId: string; submit: Received }> {
  const t = need(await startTask(peer, 'tap.test.plan', { plan: PLAN }, timeoutMs ? { timeoutMs } : {}));
  const submit = need(await waitStream(peer, t.taskId, (m) => m.type === 'plan.submit', 'plan.submit'));
  return { taskId: t.taskId, submit };
}

async function decide(peer: Peer, taskId: string, planId: string, decision: string, feedback = 'conformance decision'): Promise<Received> {
  const sent = await peer.post('plan.decision', { plan_id: planId, decision, feedback }, { task_id: taskId });
  return need(await peer.reply(sent));
}

const CHANGEABLE = ['intent', 'steps', 'rollback', 'estimated_cost', 'risk_level'] as const;

/** The late-decision scenario: when does the first plan.holding reminder come, and the second? */
async function holdingScenario(
  ctx: CaseContext,
): Promise<{ first?: Observed; second?: Observed; heartbeat: number; problem?: Outcome; afterDecision?: Outcome | null }> {
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

export const planCases: Case[] = [
  defineCase({
    id: 'plans.submit',
    title: 'tap.test.plan submits the plan with a plan_id while running; the task awaits approval with the plan pending',
    profile: P,
    requirements: ['TAP-PLAN-002', 'TAP-PLAN-003'],
    needs: PLAN_CAP,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { taskId, submit } = await submitted(peer);
      const plan = submit.msg.payload.plan;
      const snap = need(await status(peer, taskId));
      const { plan_id: _, ...draft } = plan ?? {};
      await decide(peer, taskId, plan?.plan_id, 'rejected');
      need(await collectUntilResult(peer, taskId));
      if (snap.msg.type !== 'task.snapshot') return wrongReply('task.status while awaiting approval', 'task.snapshot', snap.msg);
      return verdictOf(
        `plan ${plan?.plan_id} pending`,
        check(jsonEqual(draft, PLAN), 'the submitted plan is not the plan given to tap.test.plan', show(PLAN), show(draft)),
        check(
          snap.msg.payload.state === 'awaiting_approval',
          'the task is not awaiting_approval after plan.submit',
          'awaiting_approval',
          show(snap.msg.payload.state),
        ),
        check(
          snap.msg.payload.plan?.plan_id === plan?.plan_id && snap.msg.payload.plan?.state === 'pending',
          'the snapshot does not show the plan pending',
          `{ plan_id: ${plan?.plan_id}, state: pending }`,
          show(snap.msg.payload.plan),
        ),
      );
    },
  }),
  defineCase({
    id: 'plans.no-effect-before-approval',
    title: 'No side effect (no step output) happens before the plan is approved',
    profile: P,
    requirements: ['TAP-PLAN-001'],
    needs: PLAN_CAP,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { taskId, submit } = await submitted(peer);
      await ctx.sleep(300);
      const early = outputsOf(peer.received.filter((r) => r.msg.task_id === taskId));
      await decide(peer, taskId, submit.msg.payload.plan?.plan_id, 'rejected');
      const r = need(await collectUntilResult(peer, taskId));
      return verdictOf(
        'nothing ran',
        check(early.length === 0, `${early.length} step outputs before any decision`, 'none', `${early.length}`),
        check(outputsOf(r.stream).length === 0, 'steps ran although the plan was rejected', 'none', `${outputsOf(r.stream).length}`),
      );
    },
  }),
  defineCase({
    id: 'plans.approve',
    title: 'On approval: a snapshot (before the decision), running, one output { step, action } per step, then { executed }',
    profile: P,
    requirements: ['TAP-PLAN-008', 'TAP-PLAN-011'],
    needs: PLAN_CAP,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { taskId, submit } = await submitted(peer);
      const reply = await decide(peer, taskId, submit.msg.payload.plan?.plan_id, 'approved');
      if (reply.msg.type !== 'task.snapshot') return wrongReply('plan.decision approved', 'task.snapshot', reply.msg);
      const r = need(await collectUntilResult(peer, taskId));
      const after = r.stream.filter((m) => m.index > submit.index);
      const actions = PLAN.steps.map((s) => s.action);
      const outs = outputsOf(after).map((m) => m.payload.data);
      const running = after.findIndex((m) => m.msg.payload?.kind === 'state' && m.msg.payload.state === 'running');
      const firstOut = after.findIndex((m) => m.msg.payload?.kind === 'output');
      const snapAfter = need(await status(peer, taskId));
      return verdictOf(
        'approved and executed as approved',
        check(
          reply.msg.payload.state === 'awaiting_approval' && reply.msg.payload.plan?.state === 'pending',
          'the decision reply does not show the task before the decision',
          'awaiting_approval, plan pending',
          show({ state: reply.msg.payload.state, plan: reply.msg.payload.plan }),
        ),
        check(
          running >= 0 && (firstOut === -1 || running < firstOut),
          'no state event running before the steps',
          'state running, then the steps',
          r.stream.map((m) => describeMessage(m.msg)).join(', '),
        ),
        check(
          jsonEqual(
            outs,
            actions.map((action, step) => ({ step, action })),
          ),
          'the step outputs are not { step, action } for each approved step in order',
          show(actions.map((action, step) => ({ step, action }))),
          show(outs),
        ),
        check(
          jsonEqual(r.result.msg.payload.output, { executed: actions }),
          'the result is not { executed: [actions] }',
          show({ executed: actions }),
          show(r.result.msg.payload.output),
        ),
        check(
          snapAfter.msg.payload?.plan?.state === 'completed',
          'the plan of the completed task is not completed',
          'plan.state completed',
          show(snapAfter.msg.payload?.plan),
        ),
      );
    },
  }),
  defineCase({
    id: 'plans.reject',
    title: 'On rejection the task ends failed with PLAN_REJECTED and the plan is rejected',
    profile: P,
    requirements: ['TAP-PLAN-009'],
    needs: PLAN_CAP,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { taskId, submit } = await submitted(peer);
      const reply = await decide(peer, taskId, submit.msg.payload.plan?.plan_id, 'rejected', 'too risky');
      if (reply.msg.type !== 'task.snapshot') return wrongReply('plan.decision rejected', 'task.snapshot', reply.msg);
      const r = need(await collectUntilResult(peer, taskId));
      const snap = need(await status(peer, taskId));
      return verdictOf(
        'failed PLAN_REJECTED',
        check(
          r.result.msg.payload.status === 'failed' && r.result.msg.payload.error?.code === 'PLAN_REJECTED',
          'a rejected plan did not end the task failed PLAN_REJECTED',
          'failed PLAN_REJECTED',
          describeMessage(r.result.msg),
        ),
        check(
          snap.msg.payload?.plan?.state === 'rejected',
          'the snapshot does not show the plan rejected',
          'plan.state rejected',
          show(snap.msg.payload?.plan),
        ),
      );
    },
  }),
  defineCase({
    id: 'plans.needs-revision',
    title: 'needs_revision brings a new plan: new plan_id, revision_of, feedback, at least one changed field, still awaiting approval',
    profile: P,
    requirements: ['TAP-PLAN-010', 'TAP-PLAN-006', 'TAP-PLAN-003'],
    needs: PLAN_CAP,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { taskId, submit } = await submitted(peer);
      const first = submit.msg.payload.plan;
      const reply = await decide(peer, taskId, first?.plan_id, 'needs_revision', 'lower the risk, please');
      if (reply.msg.type !== 'task.snapshot') return wrongReply('plan.decision needs_revision', 'task.snapshot', reply.msg);
      const rev = need(
        await waitStream(
          peer,
          taskId,
          (m) => m.type === 'plan.submit' && m.payload?.plan?.plan_id !== first?.plan_id,
          'the revised plan.submit',
        ),
      );
      const between = peer.received.filter(
        (m) => m.msg.task_id === taskId && m.index > submit.index && m.index < rev.index && m.msg.payload?.kind === 'state',
      );
      const p = rev.msg.payload;
      const changed = CHANGEABLE.filter((k) => !jsonEqual(p.plan?.[k], first?.[k]));
      const old = await decide(peer, taskId, first?.plan_id, 'approved');
      const ok = await decide(peer, taskId, p.plan?.plan_id, 'approved');
      need(await collectUntilResult(peer, taskId));
      return verdictOf(
        `revised: ${changed.join(', ')} changed`,
        check(
          p.revision_of === first?.plan_id,
          'the revision does not name the plan it revises',
          `revision_of ${first?.plan_id}`,
          show(p.revision_of),
        ),
        check(
          typeof p.feedback === 'string' && p.feedback.length > 0,
          'the revision does not state the feedback it addresses',
          'feedback',
          show(p.feedback),
        ),
        check(changed.length > 0, 'the revised plan is unchanged', `a change in one of ${CHANGEABLE.join(', ')}`, 'no change'),
        check(
          between.length === 0,
          'a state event came between the plan and its revision; the task stays awaiting_approval',
          'no state event',
          between.map((m) => describeMessage(m.msg)).join(', '),
        ),
        checkError(old.msg, { code: 'PROTOCOL_VIOLATION' }, 'a decision for the superseded plan'),
        check(ok.msg.type === 'task.snapshot', 'the decision for the revised plan was refused', 'task.snapshot', describeMessage(ok.msg)),
      );
    },
  }),
  defineCase({
    id: 'plans.decision.wrong-plan',
    title: 'A decision naming a plan that is not the current one gets PROTOCOL_VIOLATION',
    profile: P,
    requirements: ['TAP-PLAN-006'],
    needs: PLAN_CAP,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { taskId, submit } = await submitted(peer);
      const wrong = await decide(peer, taskId, 'not-the-plan', 'approved');
      await decide(peer, taskId, submit.msg.payload.plan?.plan_id, 'rejected');
      need(await collectUntilResult(peer, taskId));
      return verdictOf('refused', checkError(wrong.msg, { code: 'PROTOCOL_VIOLATION', taskId }, 'a decision for an unknown plan_id'));
    },
  }),
  defineCase({
    id: 'plans.decision.terminal-first',
    title: 'A decision for a terminal task gets TASK_TERMINAL before any check of the plan',
    profile: P,
    requirements: ['TAP-PLAN-005'],
    needs: PLAN_CAP,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { taskId, submit } = await submitted(peer);
      await decide(peer, taskId, submit.msg.payload.plan?.plan_id, 'rejected');
      need(await collectUntilResult(peer, taskId));
      const same = await decide(peer, taskId, submit.msg.payload.plan?.plan_id, 'approved');
      const other = await decide(peer, taskId, 'no-such-plan', 'approved');
      return verdictOf(
        'TASK_TERMINAL both times',
        checkError(same.msg, { code: 'TASK_TERMINAL' }, 'a decision for the plan of a task that ended'),
        checkError(other.msg, { code: 'TASK_TERMINAL' }, 'a decision with a wrong plan_id for a task that ended'),
      );
    },
  }),
  defineCase({
    id: 'plans.withdrawn',
    title: 'Cancelling a task awaiting approval ends it cancelled and the pending plan becomes withdrawn',
    profile: P,
    requirements: ['TAP-PLAN-004', 'TAP-CAN-002'],
    needs: PLAN_CAP,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { taskId } = await submitted(peer);
      const c = await peer.post('task.cancel', {}, { task_id: taskId });
      const reply = need(await peer.reply(c));
      const r = need(await collectUntilResult(peer, taskId));
      const snap = need(await status(peer, taskId));
      return verdictOf(
        'cancelled, plan withdrawn',
        check(
          reply.msg.type === 'task.snapshot' && reply.msg.payload.state === 'awaiting_approval',
          'the cancel reply does not show the task awaiting approval',
          'task.snapshot awaiting_approval',
          describeMessage(reply.msg),
        ),
        check(r.result.msg.payload.status === 'cancelled', 'the task did not end cancelled', 'cancelled', describeMessage(r.result.msg)),
        check(
          snap.msg.payload?.plan?.state === 'withdrawn',
          'the plan of a task that ended while it was pending is not withdrawn',
          'plan.state withdrawn',
          show(snap.msg.payload?.plan),
        ),
      );
    },
  }),
  defineCase({
    id: 'plans.timeout-while-pending',
    title: 'A task whose deadline passes while awaiting approval ends timed_out and its plan becomes withdrawn',
    profile: P,
    requirements: ['TAP-PLAN-004', 'TAP-TASK-015'],
    needs: PLAN_CAP,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { taskId } = await submitted(peer, 400);
      const r = need(await collectUntilResult(peer, taskId, ctx.scaled(5000)));
      const snap = need(await status(peer, taskId));
      const outs = outputsOf(r.stream).length;
      return verdictOf(
        'timed out, withdrawn, nothing executed',
        check(
          r.result.msg.payload.status === 'timed_out',
          'the task did not end timed_out at its deadline',
          'timed_out',
          describeMessage(r.result.msg),
        ),
        check(outs === 0, 'steps ran without approval', 'no step output', `${outs}`),
        check(
          snap.msg.payload?.plan?.state === 'withdrawn',
          'the pending plan of the timed-out task is not withdrawn',
          'plan.state withdrawn',
          show(snap.msg.payload?.plan),
        ),
      );
    },
  }),
  defineCase({
    id: 'plans.deadline.before-step',
    title: 'No step of an approved plan starts after the effective deadline',
    profile: P,
    requirements: ['TAP-PLAN-012'],
    needs: PLAN_CAP,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.plan', { plan: PLAN }, { timeoutMs: 500 }));
      const deadline = Date.parse(t.accepted.msg.payload.deadline);
      const submit = need(await waitStream(peer, t.taskId, (m) => m.type === 'plan.submit', 'plan.submit'));
      const wait = Math.max(0, deadline - Date.now() - 15);
      await new Promise((r) => setTimeout(r, wait));
      const d = await peer.post(
        'plan.decision',
        { plan_id: submit.msg.payload.plan?.plan_id, decision: 'approved', feedback: 'just in time' },
        { task_id: t.taskId },
      );
      const reply = need(await peer.reply(d));
      const r = need(await collectUntilResult(peer, t.taskId, ctx.scaled(5000)));
      // A step's output follows the check that let it start by the agent's own processing:
      // a few milliseconds (scaled) are allowed between the deadline and the output's timestamp.
      const slack = ctx.scaled(10);
      const late = outputsOf(r.stream).filter((m) => Date.parse(m.timestamp) > deadline + slack);
      const status = r.result.msg.payload.status;
      return verdictOf(
        `${reply.msg.type === 'error' ? reply.msg.payload.code : 'approved'}; ended ${status}`,
        reply.msg.type === 'error'
          ? checkError(reply.msg, { code: 'TASK_TERMINAL' }, 'a decision after the deadline ended the task')
          : null,
        check(
          ['completed', 'timed_out'].includes(status),
          `the task ended ${status}`,
          'completed or timed_out',
          describeMessage(r.result.msg),
        ),
        check(
          late.length === 0,
          `${late.length} steps started more than ${slack} ms after the effective deadline ${t.accepted.msg.payload.deadline} (by the agent's own timestamps)`,
          'no step after the deadline',
          late.map((m) => m.timestamp).join(', '),
        ),
      );
    },
  }),
  defineCase({
    id: 'plans.holding.first-reminder',
    title: 'A plan with no decision after request_timeout_ms becomes holding with a first plan.holding reminder, never earlier',
    profile: P,
    requirements: ['TAP-PLAN-013'],
    needs: PLAN_CAP,
    budgetMs: 45_000,
    run: async (ctx) => {
      const r = await ctx.shared('plan-holding', holdingScenario);
      if (r.problem) return r.problem;
      return judgeOccurrence(timingWindow(1000, ctx.env.timeScale), r.first, 'the first plan.holding reminder (request_timeout_ms 1000)');
    },
  }),
  defineCase({
    id: 'plans.holding.punctual',
    title: 'The first plan.holding reminder comes punctually',
    profile: P,
    requirements: ['TAP-PLAN-014'],
    needs: PLAN_CAP,
    budgetMs: 45_000,
    run: async (ctx) => {
      const r = await ctx.shared('plan-holding', holdingScenario);
      if (r.problem) return r.problem;
      return judgePunctuality(timingWindow(1000, ctx.env.timeScale), r.first, 'the first plan.holding reminder');
    },
  }),
  defineCase({
    id: 'plans.holding.repeat',
    title: 'The plan.holding reminder repeats every heartbeat_ms while the plan is holding',
    profile: P,
    requirements: ['TAP-PLAN-015'],
    needs: PLAN_CAP,
    budgetMs: 45_000,
    run: async (ctx) => {
      const r = await ctx.shared('plan-holding', holdingScenario);
      if (r.problem) return r.problem;
      if (r.first === undefined) return fail('no first reminder, so no repeat', 'a reminder every heartbeat_ms', 'none');
      if (r.heartbeat > 10_000) return skipped(`heartbeat_ms is ${r.heartbeat}; a repeat that far apart is not waited for`);
      const w = timingWindow(r.heartbeat, ctx.env.timeScale);
      const o = judgeOccurrence(w, r.second, `the second plan.holding reminder (heartbeat_ms ${r.heartbeat})`);
      return o.verdict === 'PASS' ? judgePunctuality(w, r.second, 'the second plan.holding reminder') : o;
    },
  }),
  defineCase({
    id: 'plans.holding.never-decides',
    title: 'A late plan is never decided for the requester, and a decision for a holding plan is taken like one for a pending plan',
    profile: P,
    requirements: ['TAP-PLAN-016', 'TAP-PLAN-007'],
    needs: PLAN_CAP,
    budgetMs: 45_000,
    run: async (ctx) => {
      const r = await ctx.shared('plan-holding', holdingScenario);
      if (r.problem) return r.problem;
      return r.afterDecision ?? pass('still awaiting the requester; the late approval was taken');
    },
  }),
  defineCase({
    id: 'plans.no-resubmit-rejected',
    title: 'A rejected plan is never submitted again',
    profile: P,
    requirements: ['TAP-PLAN-010'],
    needs: PLAN_CAP,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { taskId, submit } = await submitted(peer);
      const mark = peer.mark();
      await decide(peer, taskId, submit.msg.payload.plan?.plan_id, 'rejected', 'no');
      need(await collectUntilResult(peer, taskId));
      return verdictOf(
        'not resubmitted',
        await expectNothing(peer, mark, (m) => m.msg.type === 'plan.submit', 'a rejected plan must not come back'),
      );
    },
  }),
];
