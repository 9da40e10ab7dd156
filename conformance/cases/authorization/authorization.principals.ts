/** authorization profile, Principals (spec: authorization#principals). */
import { type Case, defineCase } from '../../case.ts';
import { TWO_PRINCIPALS, TWO_SESSIONS } from './kit.ts';
import { check, checkError, need, require, runTask, verdictOf } from '../kit.ts';
import { collectUntilResult, describeMessage, request } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'authorization.isolation.idempotency',
    title: 'Idempotency records do not cross principals: the same key from another session creates a new task',
    profile: 'authorization',
    requirements: ['TAP-AUTH-002'],
    needs: { capabilities: ['tap.test.counter'], ...TWO_PRINCIPALS },
    run: async (ctx) => {
      const a = need(await ctx.session());
      const b = need(await ctx.session({ principal: 'another' }));
      const key = `iso-${a.ids.task('k')}`;
      need(await runTask(a, 'tap.test.counter', { key }, { idempotencyKey: key }));
      const r = await request(b, 'tap.test.counter', { key }, { idempotencyKey: key });
      const m = need(r.reply).msg;
      if (m.type === 'task.accepted') need(await collectUntilResult(b, r.sent.task_id!));
      return verdictOf(
        'a new task',
        check(
          m.type === 'task.accepted',
          "another principal's idempotency record answered this session",
          'task.accepted',
          describeMessage(m),
        ),
      );
    },
  }),
  defineCase({
    id: 'authorization.isolation.idempotency-capability',
    title: 'Idempotency records are keyed by capability too: one key used for a second capability starts a new task of it',
    profile: 'authorization',
    requirements: ['TAP-AUTH-002'],
    needs: { capabilities: ['tap.test.counter', 'tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const key = `cap-${peer.ids.task('k')}`;
      need(await runTask(peer, 'tap.test.counter', { key }, { idempotencyKey: key }));
      const taskId = peer.ids.task('other-capability');
      const r = await request(peer, 'tap.test.echo', { echoed: key }, { idempotencyKey: key, taskId });
      const m = need(r.reply).msg;
      require(
        check(
          m.type === 'task.accepted' && m.task_id === taskId,
          "a request for another capability under the same idempotency_key was answered from the first capability's record",
          `task.accepted of the new task ${taskId}`,
          describeMessage(m),
        ),
      );
      const done = need(await collectUntilResult(peer, taskId)).result.msg.payload;
      return verdictOf(
        'a new task of the second capability',
        check(
          done.status === 'completed' && JSON.stringify(done.output) === JSON.stringify({ echoed: key }),
          'the task of the second capability did not run as its own',
          `completed with output ${JSON.stringify({ echoed: key })}`,
          `${String(done.status)} with output ${JSON.stringify(done.output)}`,
        ),
      );
    },
  }),
  defineCase({
    id: 'authorization.isolation.own-session',
    title: 'An unauthenticated session is a principal of its own: a second one cannot resume its stream',
    profile: 'authorization',
    requirements: ['TAP-AUTH-001', 'TAP-RES-006'],
    needs: { capabilities: ['tap.test.stream'], ...TWO_SESSIONS, anonymous: true },
    run: async (ctx) => {
      const a = need(await ctx.session());
      const b = need(await ctx.session());
      const t = need(await runTask(a, 'tap.test.stream', { count: 2 }));
      const mark = b.mark();
      const sent = await b.post('task.resume', { last_sequence: 0 }, { task_id: t.taskId });
      const r = need(await b.reply(sent));
      await b.barrier();
      const leaked = b.sinceHere(mark).filter((m) => m.msg.task_id === t.taskId && m.msg.sequence !== undefined);
      return verdictOf(
        'nothing leaked',
        checkError(r.msg, { code: 'UNKNOWN_TASK' }, "task.resume of another principal's task"),
        check(
          leaked.length === 0,
          `${leaked.length} messages of another principal's task reached this session`,
          'none',
          `${leaked.length}`,
        ),
      );
    },
  }),
];
