/** authorization profile, TAP 1.1, Listing tasks across principals (spec: tasks#listing, authorization#task-visibility). */
import { type Case, defineCase } from '../../case.ts';
import { check, expectError, firstFailure, listPage, need, require, runTask, show, verdictOf, walkTasks } from '../kit.ts';
import { TWO_PRINCIPALS } from './kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'authorization.list.isolation',
    title: "task.list never lists another principal's task, and refuses another principal's cursor",
    profile: 'authorization',
    requirements: ['TAP-LIST-101', 'TAP-LIST-106'],
    needs: { capabilities: ['tap.test.echo'], ...TWO_PRINCIPALS },
    run: async (ctx) => {
      const a = need(await ctx.session());
      const b = need(await ctx.session({ principal: 'another' }));
      const mine = [need(await runTask(a, 'tap.test.echo', 'a')).taskId];
      const theirs = [need(await runTask(b, 'tap.test.echo', 'b1')).taskId, need(await runTask(b, 'tap.test.echo', 'b2')).taskId];
      const ofA = (await walkTasks(a, {}, 100)).tasks.map((t) => t.task_id);
      const ofB = (await walkTasks(b, {}, 100)).tasks.map((t) => t.task_id);
      const leakedToA = theirs.filter((id) => ofA.includes(id));
      const leakedToB = mine.filter((id) => ofB.includes(id));
      require(
        firstFailure(
          check(
            leakedToA.length === 0,
            `one principal's listing holds the other's tasks ${leakedToA.join(', ')}`,
            'only its own tasks',
            show(ofA),
          ),
          check(
            leakedToB.length === 0,
            `one principal's listing holds the other's task ${leakedToB.join(', ')}`,
            'only its own tasks',
            show(ofB),
          ),
          check(
            mine.every((id) => ofA.includes(id)),
            `the listing of a principal lacks its own task ${mine[0]}`,
            mine[0],
            show(ofA),
          ),
        ),
      );
      const page = (await listPage(b, { limit: 1 })).reply.msg;
      const cursor = page.payload?.next_cursor;
      require(
        check(typeof cursor === 'string', 'a task.list of limit 1 over two tasks gave no next_cursor', 'next_cursor', show(page.payload)),
      );
      const sent = await a.post('task.list', { limit: 1, cursor });
      return verdictOf(
        "each principal lists only its own tasks, and another principal's cursor is refused",
        await expectError(a, sent, { code: 'INVALID_CURSOR' }, "task.list with another principal's cursor"),
      );
    },
  }),
];
