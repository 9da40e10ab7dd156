/** cancellation profile, Repeated and late cancels (spec: cancellation#repeated-cancels). */
import { type Case, defineCase } from '../../case.ts';
import { cancel, cap, checkCancelled, runningSleep } from './kit.ts';
import { check, expectError, need, require, runTask, show, verdictOf, wrongReply } from '../kit.ts';
import { collectUntilResult, describeMessage } from '../../steps.ts';
import { pass } from '../../verdict.ts';

export const cases: Case[] = [
  defineCase({
    id: 'cancellation.repeated',
    title: 'A second cancel while the first is in effect gets a snapshot and has no other effect',
    profile: 'cancellation',
    requirements: ['TAP-CAN-005'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const taskId = await runningSleep(peer);
      const a = await peer.post('task.cancel', {}, { task_id: taskId });
      const b = await peer.post('task.cancel', { reason: 'again' }, { task_id: taskId });
      const ra = need(await peer.reply(a));
      const rb = need(await peer.reply(b));
      const r = need(await collectUntilResult(peer, taskId));
      const cancellingEvents = r.stream.filter((m) => m.msg.payload?.kind === 'state' && m.msg.payload.state === 'cancelling').length;
      return verdictOf(
        'two snapshots, one cancel',
        check(
          ra.msg.type === 'task.snapshot',
          'the first cancel was not answered with a snapshot',
          'task.snapshot',
          describeMessage(ra.msg),
        ),
        check(
          rb.msg.type === 'task.snapshot',
          'a repeated cancel (task cancelling or cancelled by the first) was not answered with a snapshot',
          'task.snapshot',
          describeMessage(rb.msg),
        ),
        check(cancellingEvents <= 1, 'the repeated cancel caused a second cancelling event', 'one cancelling event', `${cancellingEvents}`),
        checkCancelled(r.result.msg),
      );
    },
  }),
  defineCase({
    id: 'cancellation.after-cancelled',
    title: 'A cancel of a task a cancel already ended gets a snapshot showing cancelled',
    profile: 'cancellation',
    requirements: ['TAP-CAN-006'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const taskId = await runningSleep(peer);
      await cancel(peer, taskId);
      need(await collectUntilResult(peer, taskId));
      const { reply } = await cancel(peer, taskId);
      if (reply.msg.type !== 'task.snapshot') return wrongReply('a cancel of a cancelled task', 'task.snapshot', reply.msg);
      return verdictOf(
        'snapshot (cancelled)',
        check(
          reply.msg.payload.state === 'cancelled' && reply.msg.payload.result?.status === 'cancelled',
          'the snapshot does not show the cancelled task with its result',
          'state cancelled with result',
          show(reply.msg.payload),
        ),
      );
    },
  }),
  defineCase({
    id: 'cancellation.terminal',
    title: 'A cancel of a task that ended otherwise (completed, failed, timed out) gets TASK_TERMINAL',
    profile: 'cancellation',
    requirements: ['TAP-CAN-007'],
    needs: cap('echo', 'fail', 'sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const done = need(await runTask(peer, 'tap.test.echo', 1));
      const failed = need(await runTask(peer, 'tap.test.fail', { code: 'INTERNAL_ERROR' }));
      const timed = need(await runTask(peer, 'tap.test.sleep', { ms: 60_000 }, { timeoutMs: 100, resultTimeoutMs: ctx.scaled(5000) }));
      for (const [t, how] of [
        [done, 'completed'],
        [failed, 'failed'],
        [timed, 'timed out'],
      ] as const) {
        const sent = await peer.post('task.cancel', {}, { task_id: t.taskId });
        require(await expectError(peer, sent, { code: 'TASK_TERMINAL', taskId: t.taskId }, `a cancel of a ${how} task`));
      }
      return pass('TASK_TERMINAL for each');
    },
  }),
];
