/** core profile, Acceptance (spec: tasks#acceptance). */
import { type Case, defineCase } from '../../case.ts';
import { check, expectError, expectNoTask, need, require, show, verdictOf } from '../kit.ts';
import { ECHO } from './kit.ts';
import { startTask } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.errors.no-effect',
    title: 'A refused task.request creates no task: CAPABILITY_NOT_SUPPORTED then UNKNOWN_TASK',
    profile: 'core',
    // A request the agent must refuse; until it does, it may have become a task.
    tasks: 1,
    requirements: ['TAP-TASK-002', 'TAP-ERR-009'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const taskId = peer.ids.task();
      const sent = await peer.post('task.request', { capability: 'zz.not.offered', input: 1 }, { task_id: taskId });
      require(await expectError(peer, sent, { code: 'CAPABILITY_NOT_SUPPORTED' }, 'a capability the agent does not offer'));
      return verdictOf('refused, no task', await expectNoTask(peer, taskId, 'the request was refused'));
    },
  }),
  defineCase({
    id: 'core.tasks.accept-echo',
    title: 'A task.request is answered with task.accepted naming the capability and the effective deadline',
    profile: 'core',
    requirements: ['TAP-TASK-003', 'TAP-EVT-003'],
    needs: ECHO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.echo', { hello: 'world' }, { timeoutMs: 60_000 }));
      const p = t.accepted.msg.payload;
      const deadline = Date.parse(p.deadline);
      const sentAt = Date.parse(t.sent.timestamp);
      return verdictOf(
        `accepted with deadline ${p.deadline}`,
        check(p.capability === 'tap.test.echo', 'task.accepted does not name the capability', 'tap.test.echo', show(p.capability)),
        check(typeof p.deadline === 'string', 'task.accepted gives no effective deadline', 'a deadline', 'none'),
        check(
          !Number.isNaN(deadline) && deadline <= sentAt + 60_000 + 60_000 && deadline >= sentAt + 60_000 - 60_000,
          'the effective deadline is not about receipt + timeout_ms (60 s)',
          `about ${new Date(sentAt + 60_000).toISOString()}`,
          String(p.deadline),
        ),
        check(t.accepted.msg.sequence === 1, 'task.accepted is not sequence 1', '1', show(t.accepted.msg.sequence)),
      );
    },
  }),
];
