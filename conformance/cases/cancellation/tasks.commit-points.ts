/** cancellation profile, Commit points (spec: tasks#commit-points). */
import { type Case, defineCase } from '../../case.ts';
import { cap } from './kit.ts';
import { check, checkError, checkWalk, need, require, statesOf, wrongReply } from '../kit.ts';
import { collectUntilResult, startTask } from '../../steps.ts';
import { pass } from '../../verdict.ts';

export const cases: Case[] = [
  defineCase({
    id: 'cancellation.race-completion',
    title: 'A cancel racing completion gets one of the outcomes the commit-point order allows',
    profile: 'cancellation',
    requirements: ['TAP-TASK-018', 'TAP-TASK-019'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const outcomes: string[] = [];
      for (const ms of [5, 20, 40, 60, 80]) {
        const t = need(await startTask(peer, 'tap.test.sleep', { ms }));
        await new Promise((r) => setTimeout(r, ms));
        const sent = await peer.post('task.cancel', {}, { task_id: t.taskId });
        const reply = need(await peer.reply(sent));
        const r = need(await collectUntilResult(peer, t.taskId));
        const resultFirst = r.result.index < reply.index;
        const status = r.result.msg.payload.status;
        if (reply.msg.type === 'error') {
          // The result was queued before the cancel was handled: it must already be on the wire.
          require(checkError(reply.msg, { code: 'TASK_TERMINAL' }, 'a cancel handled after completion'));
          require(
            check(
              resultFirst,
              'TASK_TERMINAL came before the task.result it refers to (a task is terminal only once its result is queued)',
              'task.result, then TASK_TERMINAL',
              'TASK_TERMINAL first',
            ),
          );
          require(check(status === 'completed', 'the cancel was refused as terminal but the task did not complete', 'completed', status));
          outcomes.push('terminal');
        } else if (reply.msg.type === 'task.snapshot') {
          require(
            check(
              !resultFirst,
              'a snapshot answered the cancel although the result had already been sent; the cancel saw a terminal task',
              'TASK_TERMINAL',
              'task.snapshot',
            ),
          );
          require(
            check(
              ['cancelled', 'completed'].includes(status),
              `a cancelled sleep ended ${status}`,
              'cancelled (or completed, reached before the cancel)',
              status,
            ),
          );
          require(checkWalk(statesOf(r.stream), 'the raced task'));
          outcomes.push(status);
        } else return wrongReply('a racing cancel', 'task.snapshot or TASK_TERMINAL', reply.msg);
      }
      return pass(`outcomes: ${outcomes.join(', ')}`);
    },
  }),
];
