/** core profile, Correlation (spec: errors#correlation). */
import { type Case, defineCase } from '../../case.ts';
import { check, checkError, expectError, need, require, show, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.errors.correlation',
    title: 'An error carries the reply_to and task_id of the message it answers',
    profile: 'core',
    requirements: ['TAP-ERR-003'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const taskId = peer.ids.task('absent');
      const sent = await peer.post('task.cancel', {}, { task_id: taskId });
      return verdictOf('correlated', await expectError(peer, sent, { code: 'UNKNOWN_TASK', taskId }, 'task.cancel of an unknown task'));
    },
  }),
  defineCase({
    id: 'core.bad-input.reply-to-readable',
    title: 'An error answering an invalid message carries its message_id when readable',
    profile: 'core',
    requirements: ['TAP-ERR-003'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const m = peer.envelope('task.cancel', { reason: 7 }, { task_id: peer.ids.task() });
      await peer.send(m, { deliberate: 'reason is a number' });
      const r = need(await peer.reply(m));
      return verdictOf(
        'correlated',
        checkError(r.msg, { code: 'INVALID_MESSAGE', replyTo: m.message_id, taskId: m.task_id }, 'task.cancel with a numeric reason'),
      );
    },
  }),
  defineCase({
    id: 'core.errors.correlation-ill-formed',
    title: 'An error leaves out a reply_to or task_id that is not well-formed, and still answers',
    profile: 'core',
    requirements: ['TAP-ERR-040', 'TAP-ERR-003'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      // An ill-formed task_id: the envelope fails, the message_id is still echoed.
      const badTask = peer.envelope('task.status', {}, { task_id: 'Not A Task Id!' });
      await peer.send(badTask, { deliberate: 'an ill-formed task_id' });
      const r1 = need(await peer.reply(badTask));
      require(checkError(r1.msg, { code: 'INVALID_MESSAGE' }, 'a task.status with an ill-formed task_id'));
      require(check(r1.msg.task_id === undefined, 'the error echoes the ill-formed task_id', 'no task_id', show(r1.msg.task_id)));
      // An ill-formed message_id: the error answers it without reply_to.
      const mark = peer.mark();
      const badId = peer.envelope('ping', {}, { message_id: 'not a message id!' });
      await peer.send(badId, { deliberate: 'an ill-formed message_id' });
      const r2 = need(
        await peer.waitFor((r) => r.index >= mark && r.msg.type === 'error', 'an error for a ping with an ill-formed message_id'),
      );
      require(checkError(r2.msg, { code: 'INVALID_MESSAGE' }, 'a ping with an ill-formed message_id'));
      return verdictOf(
        'both refused, neither echoed',
        check(r2.msg.reply_to === undefined, 'the error echoes the ill-formed message_id', 'no reply_to', show(r2.msg.reply_to)),
      );
    },
  }),
];
