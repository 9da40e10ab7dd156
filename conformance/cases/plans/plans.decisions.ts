/** plans profile, Decisions (spec: plans#decisions). */
import { type Case, defineCase } from '../../case.ts';
import { decide, PLAN_CAP, submitted } from './kit.ts';
import { check, checkError, expectNothing, jsonEqual, need, outputsOf, PLAN, show, status, verdictOf, wrongReply } from '../kit.ts';
import { collectUntilResult, describeMessage, waitStream } from '../../steps.ts';

const CHANGEABLE = ['intent', 'steps', 'rollback', 'estimated_cost', 'risk_level'] as const;

export const cases: Case[] = [
  defineCase({
    id: 'plans.approve',
    title: 'On approval: a snapshot (before the decision), running, one output { step, action } per step, then { executed }',
    profile: 'plans',
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
    profile: 'plans',
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
    profile: 'plans',
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
    profile: 'plans',
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
    profile: 'plans',
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
    id: 'plans.no-resubmit-rejected',
    title: 'A rejected plan is never submitted again',
    profile: 'plans',
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
