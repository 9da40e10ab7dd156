/** authorization profile, Grants (spec: authorization#grants). */
import { type Case, defineCase } from '../../case.ts';
import { check, need, PLAN, verdictOf } from '../kit.ts';
import { collectUntilResult, describeMessage, grant, startTask, waitStream } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'authorization.expired.before-step',
    title: 'A side-effecting step is not started after the grant expired; the task ends failed AUTHORIZATION_EXPIRED',
    profile: 'authorization',
    requirements: ['TAP-AUTH-006'],
    needs: { capabilities: ['tap.test.plan'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.plan', { plan: PLAN }, { authorization: grant([], 700) }));
      const submit = need(await waitStream(peer, t.taskId, (m) => m.type === 'plan.submit', 'plan.submit'));
      await ctx.sleep(1200);
      const d = await peer.post(
        'plan.decision',
        { plan_id: submit.msg.payload.plan?.plan_id, decision: 'approved', feedback: 'late' },
        { task_id: t.taskId },
      );
      need(await peer.reply(d));
      const r = need(await collectUntilResult(peer, t.taskId));
      const steps = r.stream.filter((m) => m.msg.payload?.kind === 'output').length;
      return verdictOf(
        'no step after the grant expired',
        check(steps === 0, `${steps} steps ran after the task's grant had expired`, 'no step', `${steps} steps`),
        check(
          r.result.msg.payload.error?.code === 'AUTHORIZATION_EXPIRED',
          'the task did not end failed AUTHORIZATION_EXPIRED',
          'failed AUTHORIZATION_EXPIRED',
          describeMessage(r.result.msg),
        ),
      );
    },
  }),
];
