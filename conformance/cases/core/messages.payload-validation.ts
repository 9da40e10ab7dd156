/** core profile, Payload validation (spec: messages#payload-validation). */
import { type Case, defineCase } from '../../case.ts';
import { check, checkError, expectNoTask, need, require, show, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.message.invalid-payload',
    title: 'A payload failing its schema gets INVALID_MESSAGE with details.issues, and has no effect',
    profile: 'core',
    requirements: ['TAP-MSG-006', 'TAP-ERR-009'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const taskId = peer.ids.task();
      const sent = await peer.post(
        'task.request',
        { input: { no: 'capability' } },
        { task_id: taskId },
        { deliberate: 'payload without capability' },
      );
      const r = need(await peer.reply(sent));
      require(checkError(r.msg, { code: 'INVALID_MESSAGE', replyTo: sent.message_id, taskId }, 'task.request without capability'));
      const issues = r.msg.payload.details?.issues;
      const ok =
        Array.isArray(issues) &&
        issues.length > 0 &&
        issues.every(
          (i: Record<string, unknown>) => typeof i?.path === 'string' && typeof i?.keyword === 'string' && typeof i?.message === 'string',
        );
      require(
        check(
          ok,
          'INVALID_MESSAGE does not carry details.issues as [{ path, keyword, message }]',
          'details.issues: [{ path, keyword, message }, …]',
          show(r.msg.payload.details),
        ),
      );
      return verdictOf('refused with issues, no task', await expectNoTask(peer, taskId, 'the invalid request was refused'));
    },
  }),
];
