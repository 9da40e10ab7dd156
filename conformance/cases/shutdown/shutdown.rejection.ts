/** shutdown profile, Plan rejections during shutdown (spec: shutdown#rejection). */
import { type Case, defineCase } from '../../case.ts';
import { decisionDuringShutdown, farewellFirst, nothingAfterFarewell, replyOrFarewell } from './kit.ts';
import { check, checkError, need, verdictOf } from '../kit.ts';
import { describeMessage } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'shutdown.rejection-taken',
    title: 'A plan rejection arriving during shutdown is taken: a snapshot, then the task ends failed PLAN_REJECTED',
    profile: 'shutdown',
    requirements: ['TAP-SHUT-041'],
    needs: { capabilities: ['tap.test.plan'] },
    run: async (ctx) => {
      const started = await decisionDuringShutdown(ctx, 'rejected', 'no');
      if ('outcome' in started) return started.outcome;
      const { peer, t, d } = started;
      const dr = await replyOrFarewell(peer, d);
      // An agent that hands off at once ends the task before the rejection arrives (TAP-SHUT-007).
      if (!dr) return verdictOf(farewellFirst(['the plan.decision'], 1, 'rejection taken'), await nothingAfterFarewell(ctx, peer));
      // The task checks come first: a task the shutdown already handed off is terminal (spec: errors#order-of-checks).
      if (dr.msg.type === 'error') {
        return verdictOf(
          'the shutdown had already ended the task',
          checkError(dr.msg, { code: 'TASK_TERMINAL', replyTo: d.message_id }, 'a plan rejection during shutdown'),
          await nothingAfterFarewell(ctx, peer),
        );
      }
      const result = need(
        await peer.waitFor((r) => r.msg.type === 'task.result' && r.msg.task_id === t.taskId, 'the result of the rejected task'),
      );
      const p = result.msg.payload;
      return verdictOf(
        'rejection taken',
        check(dr.msg.type === 'task.snapshot', 'the rejection was not answered with a snapshot', 'task.snapshot', describeMessage(dr.msg)),
        check(
          p.status === 'failed' && p.error?.code === 'PLAN_REJECTED',
          'the task whose plan was rejected during shutdown did not end failed PLAN_REJECTED',
          'task.result failed PLAN_REJECTED',
          describeMessage(result.msg),
        ),
        await nothingAfterFarewell(ctx, peer),
      );
    },
  }),
];
