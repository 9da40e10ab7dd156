/** core profile, Deadline and idempotency key (spec: envelope#deadline-and-idempotency-key). */
import { type Case, defineCase } from '../../case.ts';
import { ECHO } from './kit.ts';
import { check, need, runTask, verdictOf } from '../kit.ts';
import { describeMessage } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.envelope.deadline-ignored-elsewhere',
    title: 'deadline and idempotency_key on a type other than task.request are ignored',
    profile: 'core',
    requirements: ['TAP-ENV-014'],
    needs: ECHO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.echo', 'x'));
      const past = new Date(Date.now() - 3600_000).toISOString();
      const sent = await peer.post('task.status', {}, { task_id: t.taskId, deadline: past, idempotency_key: 'ignored-key' });
      const r = need(await peer.reply(sent));
      return verdictOf(
        'ignored',
        check(
          r.msg.type === 'task.snapshot',
          `task.status with a past deadline was answered ${describeMessage(r.msg)}`,
          'task.snapshot',
          describeMessage(r.msg),
        ),
      );
    },
  }),
];
