/** tasks profile, Quiet in a session of 1.0 (spec: tasks#quiet-1-0). */
import { type Case, defineCase } from '../../case.ts';
import { cap, described } from './kit.ts';
import { check, need, verdictOf, wrongReply } from '../kit.ts';
import { collectUntilResult } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'tasks.quiet.session-1-0',
    title: 'In a session of 1.0 the agent ignores quiet: the task gets its full stream, opened by task.accepted with sequence 1',
    profile: 'tasks',
    requirements: ['TAP-QUIET-105'],
    needs: cap('echo'),
    run: async (ctx) => {
      const s = need(await ctx.sessionWith({ versions: ['1.0'] }));
      const peer = s.peer;
      const sent = await peer.post(
        'task.request',
        { capability: 'tap.test.echo', input: { in: '1.0' }, quiet: true },
        { task_id: peer.ids.task('quiet') },
        { deliberate: 'quiet, a member of 1.1, in a session of 1.0' },
      );
      const reply = need(await peer.reply(sent));
      if (reply.msg.type !== 'task.accepted') return wrongReply('a quiet request in a session of 1.0', 'task.accepted', reply.msg);
      const { stream } = need(await collectUntilResult(peer, sent.task_id!));
      const types = stream.map((r) => r.msg.type);
      return verdictOf(
        `the full stream: ${described(stream)}`,
        check(reply.msg.sequence === 1, 'task.accepted does not carry sequence 1', '1', String(reply.msg.sequence)),
        check(
          types.includes('task.event') && types[types.length - 1] === 'task.result',
          'the task of a session of 1.0 did not get its state events: quiet was not ignored',
          'task.accepted, the running event, task.result',
          described(stream),
        ),
      );
    },
  }),
];
