/** idempotency profile, Reusing a task id (spec: idempotency#task-id-reuse). */
import { type Case, defineCase } from '../../case.ts';
import { countAfter, COUNTER, freshKey } from './kit.ts';
import { check, checkError, need, require, runTask, verdictOf, wrongReply } from '../kit.ts';
import { request } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'idempotency.task-id.same-request',
    title: 'Reusing a task_id for the same request gets a snapshot of that task and runs nothing again',
    profile: 'idempotency',
    requirements: ['TAP-IDEM-008'],
    needs: COUNTER,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const key = freshKey(peer);
      const first = need(await runTask(peer, 'tap.test.counter', { key }));
      const { reply } = await request(peer, 'tap.test.counter', { key }, { taskId: first.taskId });
      const r = need(reply);
      if (r.msg.type !== 'task.snapshot') return wrongReply('the same request under the same task_id', 'task.snapshot', r.msg);
      const n = await countAfter(peer, key);
      return verdictOf('snapshot; one execution', check(n === 2, 'the counter shows the work ran again', 'count 2', String(n)));
    },
  }),
  defineCase({
    id: 'idempotency.task-id.different-request',
    title: 'Reusing a task_id for a different request gets TASK_EXISTS',
    profile: 'idempotency',
    requirements: ['TAP-IDEM-009'],
    needs: { capabilities: ['tap.test.counter', 'tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const first = need(await runTask(peer, 'tap.test.counter', { key: freshKey(peer) }));
      const a = await request(peer, 'tap.test.counter', { key: 'another' }, { taskId: first.taskId });
      require(checkError(need(a.reply).msg, { code: 'TASK_EXISTS', taskId: first.taskId }, 'the same task_id with another input'));
      const b = await request(peer, 'tap.test.echo', 1, { taskId: first.taskId });
      return verdictOf(
        'TASK_EXISTS',
        checkError(need(b.reply).msg, { code: 'TASK_EXISTS', taskId: first.taskId }, 'the same task_id with another capability'),
      );
    },
  }),
];
