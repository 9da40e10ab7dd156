/** plans profile, Execution (spec: plans#execution). */
import { type Case, defineCase } from '../../case.ts';
import { PLAN_CAP } from './kit.ts';
import { check, checkError, need, outputsOf, PLAN, verdictOf } from '../kit.ts';
import { collectUntilResult, describeMessage, startTask, waitStream } from '../../steps.ts';
import { EARLY_TOLERANCE_MS } from '../../verdict.ts';

export const cases: Case[] = [
  defineCase({
    id: 'plans.deadline.before-step',
    title: 'No step of an approved plan starts after the effective deadline',
    profile: 'plans',
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
      // A step's output follows the check that let it start by the agent's own processing, and a
      // process on a busy machine can lose the CPU between the two: the suite's clock tolerance
      // (scaled) is allowed between the deadline and the output's timestamp (spec: conformance#timing).
      const slack = ctx.scaled(EARLY_TOLERANCE_MS);
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
];
