/** cancellation profile, Cancel and deadline (spec: cancellation#cancel-and-deadline). */
import { type Case, defineCase } from '../../case.ts';
import { cap } from './kit.ts';
import { check, checkError, checkWalk, need, require, statesOf } from '../kit.ts';
import { collectUntilResult, startTask } from '../../steps.ts';
import { pass } from '../../verdict.ts';

export const cases: Case[] = [
  defineCase({
    id: 'cancellation.wins-over-deadline',
    title: 'A task cancelled near its deadline ends either timed_out (deadline first) or cancelled, never cancelling → timed_out',
    profile: 'cancellation',
    spec: 'cancellation#cancel-and-deadline',
    reason:
      "the race of a cancel with the deadline is set out in Cancel and deadline; the rules it checks are the task states' (TAP-TASK-005) and commit points'",
    requirements: ['TAP-TASK-005', 'TAP-TASK-018'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const seen: string[] = [];
      for (const lead of [0, 20, 40]) {
        const t = need(await startTask(peer, 'tap.test.sleep', { ms: 60_000 }, { timeoutMs: 150 }));
        await new Promise((r) => setTimeout(r, Math.max(0, 150 - lead)));
        const sent = await peer.post('task.cancel', {}, { task_id: t.taskId });
        const reply = need(await peer.reply(sent));
        const r = need(await collectUntilResult(peer, t.taskId));
        const states = statesOf(r.stream);
        require(checkWalk(states, 'a task cancelled at its deadline'));
        if (reply.msg.type === 'error')
          require(checkError(reply.msg, { code: 'TASK_TERMINAL' }, 'a cancel after the deadline ended the task'));
        else if (reply.msg.type === 'task.snapshot' && states.includes('cancelling')) {
          require(
            check(
              r.result.msg.payload.status === 'cancelled',
              'in cancelling the cancel wins over the deadline, yet the task did not end cancelled',
              'cancelled',
              r.result.msg.payload.status,
            ),
          );
        }
        seen.push(states[states.length - 1]!);
      }
      return pass(`ended ${seen.join(', ')}`);
    },
  }),
];
