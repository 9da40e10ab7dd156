/** idempotency profile, Retryable endings (spec: idempotency#retryable-endings). */
import { type Case, defineCase } from '../../case.ts';
import { check, need, require, runTask, show, verdictOf } from '../kit.ts';
import { freshKey } from './kit.ts';
import { collectUntilResult, describeMessage, request, startTask } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'idempotency.retryable.releases-key',
    title: 'A task ended with a retryable error releases its key: a retry under a new task_id names it in previous_task_id',
    profile: 'idempotency',
    requirements: ['TAP-IDEM-010', 'TAP-IDEM-011'],
    needs: { capabilities: ['tap.test.fail'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const key = freshKey(peer);
      const input = { code: 'INTERNAL_ERROR', message: 'transient' };
      const first = need(await runTask(peer, 'tap.test.fail', input, { idempotencyKey: key }));
      require(
        check(
          first.result.msg.payload.error?.retryable === true,
          'the first task did not end retryable',
          'retryable: true',
          show(first.result.msg.payload.error),
        ),
      );
      const retry = need(await startTask(peer, 'tap.test.fail', input, { idempotencyKey: key }));
      need(await collectUntilResult(peer, retry.taskId));
      const old = await request(peer, 'tap.test.fail', input, { taskId: first.taskId, idempotencyKey: key });
      const o = need(old.reply);
      return verdictOf(
        `retry ${retry.taskId} names ${first.taskId}`,
        check(
          retry.accepted.msg.payload.previous_task_id === first.taskId,
          "the retry's task.accepted does not name the released task in previous_task_id",
          first.taskId,
          show(retry.accepted.msg.payload.previous_task_id),
        ),
        check(
          o.msg.type === 'task.snapshot' && o.msg.task_id === first.taskId,
          "reusing the old task_id did not get the old task's snapshot",
          `task.snapshot of ${first.taskId}`,
          describeMessage(o.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'idempotency.non-retryable.keeps-key',
    title: 'A task ended with a non-retryable error keeps its key: a retry gets its snapshot',
    profile: 'idempotency',
    spec: 'idempotency#retryable-endings',
    reason: 'a non-retryable ending is the subject of Retryable endings; the rule it checks is how long records are kept (TAP-IDEM-015)',
    requirements: ['TAP-IDEM-015', 'TAP-IDEM-010'],
    needs: { capabilities: ['tap.test.fail'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const key = freshKey(peer);
      const input = { code: 'INTERNAL_ERROR', retryable: false };
      const first = need(await runTask(peer, 'tap.test.fail', input, { idempotencyKey: key }));
      const { reply } = await request(peer, 'tap.test.fail', input, { idempotencyKey: key });
      const r = need(reply);
      return verdictOf(
        'snapshot of the failed task',
        check(
          r.msg.type === 'task.snapshot' && r.msg.task_id === first.taskId,
          'a retry after a non-retryable ending did not get the original task',
          `task.snapshot of ${first.taskId}`,
          describeMessage(r.msg),
        ),
      );
    },
  }),
];
