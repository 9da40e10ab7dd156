/** tasks profile, Sequences of a quiet task (spec: tasks#quiet-sequences). */
import { type Case, defineCase } from '../../case.ts';
import { cap, checkQuietStream, quietRequest, quietResult, untilRunning } from './kit.ts';
import { check, need, show, status, verdictOf, wrongReply } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'tasks.quiet.sequences',
    title:
      'A running quiet task that sent nothing shows last_sequence 1; its first message sent carries sequence 2, and a later snapshot shows it',
    profile: 'tasks',
    requirements: ['TAP-QUIET-103', 'TAP-TASK-011', 'TAP-TASK-012'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await quietRequest(peer, 'tap.test.sleep', { ms: 30_000 });
      const running = need(await untilRunning(peer, sent.task_id!)).msg.payload ?? {};
      const cancel = await peer.post('task.cancel', {}, { task_id: sent.task_id });
      need(await peer.reply(cancel));
      const result = need(await quietResult(peer, sent));
      const after = need(await status(peer, sent.task_id!));
      if (after.msg.type !== 'task.snapshot') return wrongReply('task.status of the ended quiet task', 'task.snapshot', after.msg);
      const ended = after.msg.payload ?? {};
      return verdictOf(
        `running at last_sequence ${running.last_sequence}, ended at ${ended.last_sequence}`,
        check(
          running.state === 'running',
          'the snapshot of the running quiet task does not show it running',
          'running',
          show(running.state),
        ),
        check(
          running.last_sequence === 1,
          'a quiet task that sent nothing does not show last_sequence 1',
          '1',
          show(running.last_sequence),
        ),
        check(result.msg.sequence === 2, "the quiet task's first message sent does not carry sequence 2", '2', show(result.msg.sequence)),
        check(
          ended.last_sequence === 2 && ended.result !== undefined,
          'the snapshot of the ended quiet task does not show its result at last_sequence 2',
          'last_sequence 2 with result',
          `last_sequence ${show(ended.last_sequence)}, result ${ended.result === undefined ? 'absent' : 'present'}`,
        ),
        checkQuietStream(peer, sent, ['task.result']),
      );
    },
  }),
];
