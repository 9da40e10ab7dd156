/** plans profile, Plan states (spec: plans#plan-states). */
import { type Case, defineCase } from '../../case.ts';
import { PLAN_CAP, submitted } from './kit.ts';
import { check, need, outputsOf, show, status, verdictOf } from '../kit.ts';
import { collectUntilResult, describeMessage } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'plans.withdrawn',
    title: 'Cancelling a task awaiting approval ends it cancelled and the pending plan becomes withdrawn',
    profile: 'plans',
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
    profile: 'plans',
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
];
