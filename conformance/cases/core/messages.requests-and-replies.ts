/** core profile, Requests and replies (spec: messages#requests-and-replies). */
import { type Case, defineCase } from '../../case.ts';
import { ECHO } from './kit.ts';
import { check, need, runTask, verdictOf } from '../kit.ts';
import { describeMessage } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.message.one-reply-each',
    title: 'Every request gets exactly one direct reply carrying its message_id, and its task_id',
    profile: 'core',
    requirements: ['TAP-MSG-003', 'TAP-MSG-005'],
    needs: ECHO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.echo', 'one'));
      const sent = [
        await peer.post('ping', {}),
        await peer.post('task.status', {}, { task_id: t.taskId }),
        await peer.post('task.status', {}, { task_id: peer.ids.task('absent') }),
        await peer.post('task.cancel', {}, { task_id: t.taskId }),
        await peer.post('task.resume', { last_sequence: 0 }, { task_id: t.taskId }),
      ];
      for (const s of sent) need(await peer.reply(s));
      await peer.barrier();
      const problems: string[] = [];
      for (const s of sent) {
        const replies = peer.received.filter((r) => !r.resent && r.msg.reply_to === s.message_id);
        if (replies.length !== 1) problems.push(`${s.type} got ${replies.length} replies`);
        const r = replies[0];
        if (r && s.task_id !== undefined && r.msg.task_id !== s.task_id)
          problems.push(`the reply to ${s.type} carries task_id ${r.msg.task_id}, not ${s.task_id}`);
      }
      return verdictOf(
        'one reply each, with the task_id',
        check(problems.length === 0, problems.join('; '), 'exactly one reply per request, same task_id', problems.join('; ')),
      );
    },
  }),
  defineCase({
    id: 'core.message.reply-before-effects',
    title: 'The direct reply comes before the messages the request causes',
    profile: 'core',
    requirements: ['TAP-MSG-004'],
    needs: { capabilities: ['tap.test.stream'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.stream', { count: 3 }));
      const mark = peer.mark();
      const sent = await peer.post('task.resume', { last_sequence: 0 }, { task_id: t.taskId });
      need(await peer.reply(sent));
      await peer.barrier();
      const after = peer.since(mark).filter((r) => r.msg.task_id === t.taskId);
      const first = after[0];
      return verdictOf(
        'the snapshot came first',
        check(
          first?.msg.reply_to === sent.message_id,
          'a replayed message came before the direct reply to task.resume',
          'task.snapshot first',
          describeMessage(first?.msg),
        ),
      );
    },
  }),
];
