/** tasks profile, Concurrency (spec: limits#concurrency). */
import { type Case, defineCase } from '../../case.ts';
import { cap } from './kit.ts';
import { checkError, expectNoTask, need, require, runTask, show } from '../kit.ts';
import { fail, pass } from '../../verdict.ts';
import { collectUntilResult, request, startTask } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'tasks.concurrency.busy',
    title: 'Beyond the negotiated max_concurrent_tasks a request gets BUSY (retryable)',
    profile: 'tasks',
    requirements: ['TAP-LIM-004'],
    needs: cap('sleep', 'echo'),
    // One sleep, and the request the session limit refuses (or a broken agent runs).
    tasks: 2,
    run: async (ctx) => {
      const peer = need(await ctx.session({ params: { max_concurrent_tasks: 1 } }));
      if (peer.state.params?.max_concurrent_tasks !== 1)
        return fail('the agent did not accept max_concurrent_tasks 1', '1', show(peer.state.params?.max_concurrent_tasks));
      const first = need(await startTask(peer, 'tap.test.sleep', { ms: 30_000 }));
      const taskId = peer.ids.task();
      const { sent, reply } = await request(peer, 'tap.test.echo', 'second', { taskId });
      const bad = checkError(
        need(reply).msg,
        { code: 'BUSY', replyTo: sent.message_id, taskId },
        'a second task with max_concurrent_tasks 1',
      );
      const cancel = await peer.post('task.cancel', {}, { task_id: first.taskId });
      need(await peer.reply(cancel));
      need(await collectUntilResult(peer, first.taskId));
      require(bad);
      require(await expectNoTask(peer, taskId, 'the BUSY request was refused'));
      need(await runTask(peer, 'tap.test.echo', 'after'));
      return pass('BUSY at the limit; accepted again once the first task ended');
    },
  }),
];
