/** authorization profile, Task visibility (spec: authorization#task-visibility). */
import type { Peer, Received } from '../../peer.ts';
import { check, checkError, need, require, runTask, verdictOf } from '../kit.ts';
import { type Case, defineCase } from '../../case.ts';
import { TWO_PRINCIPALS } from './kit.ts';
import { collectUntilResult, describeMessage, request, startTask } from '../../steps.ts';

/** The error a request naming `taskId` gets, with the task id masked so two answers compare. */
function masked(m: Received['msg'], taskId: string): string {
  const p = m.payload ?? {};
  return JSON.stringify({ type: m.type, code: p.code, message: p.message, details: p.details, retryable: p.retryable })
    .split(taskId)
    .join('<id>');
}

async function statusOf(peer: Peer, taskId: string): Promise<Received> {
  const sent = await peer.post('task.status', {}, { task_id: taskId });
  return need(await peer.reply(sent));
}

export const cases: Case[] = [
  defineCase({
    id: 'authorization.isolation.unknown-task',
    title: "Another principal's task is answered exactly like a task that does not exist (UNKNOWN_TASK)",
    profile: 'authorization',
    requirements: ['TAP-AUTH-003', 'TAP-AUTH-002', 'TAP-TASK-013'],
    needs: { capabilities: ['tap.test.sleep'], ...TWO_PRINCIPALS },
    run: async (ctx) => {
      const a = need(await ctx.session());
      const b = need(await ctx.session({ principal: 'another' }));
      const t = need(await startTask(a, 'tap.test.sleep', { ms: 30_000 }));
      const ghost = `${t.taskId.slice(0, -1)}z`;
      const theirs = await statusOf(b, t.taskId);
      const none = await statusOf(b, ghost);
      const cancel = await b.post('task.cancel', {}, { task_id: t.taskId });
      const cr = need(await b.reply(cancel));
      const resume = await b.post('task.resume', { last_sequence: 0 }, { task_id: t.taskId });
      const rr = need(await b.reply(resume));
      const still = await statusOf(a, t.taskId);
      const stop = await a.post('task.cancel', {}, { task_id: t.taskId });
      need(await a.reply(stop));
      need(await collectUntilResult(a, t.taskId));
      require(checkError(theirs.msg, { code: 'UNKNOWN_TASK' }, "task.status for another session's task"));
      require(checkError(cr.msg, { code: 'UNKNOWN_TASK' }, "task.cancel for another session's task"));
      require(checkError(rr.msg, { code: 'UNKNOWN_TASK' }, "task.resume for another session's task"));
      return verdictOf(
        'invisible across principals',
        check(
          masked(theirs.msg, t.taskId) === masked(none.msg, ghost),
          "the answer about another principal's task differs from the answer about a missing one",
          masked(none.msg, ghost),
          masked(theirs.msg, t.taskId),
        ),
        check(
          still.msg.type === 'task.snapshot' && still.msg.payload.state !== 'cancelling',
          "the other session's cancel affected the task",
          'the task still running for its owner',
          describeMessage(still.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'authorization.isolation.task-id',
    title: 'A task_id used by one principal does not keep another from using it',
    profile: 'authorization',
    requirements: ['TAP-AUTH-004'],
    needs: { capabilities: ['tap.test.echo'], ...TWO_PRINCIPALS },
    run: async (ctx) => {
      const a = need(await ctx.session());
      const b = need(await ctx.session({ principal: 'another' }));
      const first = need(await runTask(a, 'tap.test.echo', 'a'));
      const second = await request(b, 'tap.test.echo', 'b', { taskId: first.taskId });
      const m = need(second.reply).msg;
      if (m.type === 'task.accepted') need(await collectUntilResult(b, first.taskId));
      return verdictOf(
        'both principals use the id',
        check(
          m.type === 'task.accepted',
          'a second principal could not use a task_id the first had used',
          'task.accepted',
          describeMessage(m),
        ),
      );
    },
  }),
];
