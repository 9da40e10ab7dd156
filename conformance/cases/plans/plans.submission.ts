/** plans profile, Submission (spec: plans#submission). */
import { type Case, defineCase } from '../../case.ts';
import { decide, PLAN_CAP, submitted } from './kit.ts';
import { check, jsonEqual, need, outputsOf, PLAN, show, status, verdictOf, wrongReply } from '../kit.ts';
import { collectUntilResult } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'plans.submit',
    title: 'tap.test.plan submits the plan with a plan_id while running; the task awaits approval with the plan pending',
    profile: 'plans',
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
    profile: 'plans',
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
];
