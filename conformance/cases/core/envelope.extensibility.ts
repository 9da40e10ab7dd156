/** core profile, Extensibility (spec: envelope#extensibility). */
import { type Case, defineCase } from '../../case.ts';
import { ECHO } from './kit.ts';
import { check, jsonEqual, need, runTask, show, verdictOf } from '../kit.ts';
import { describeMessage } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.envelope.unknown-members-ignored',
    title: 'Unknown envelope and payload members are ignored, not refused',
    profile: 'core',
    requirements: ['TAP-ENV-015', 'TAP-VER-004'],
    needs: ECHO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const input = { a: 1 };
      const t = need(
        await runTask(peer, 'tap.test.echo', input, {
          extra: { x_future_member: { nested: true }, priority: 7, metadata: { trace_id: 'tc-trace', vendor_hint: 'x' } } as never,
        }),
      );
      const snap = await peer.post('task.status', { 'x-extension': 'ignored', unknown: [1, 2] }, {
        task_id: t.taskId,
        extra_envelope: 'ignored',
      } as never);
      const reply = need(await peer.reply(snap));
      return verdictOf(
        'unknown members made no difference',
        check(
          jsonEqual(t.result.msg.payload.output, input),
          'the echo output differs from the input',
          show(input),
          show(t.result.msg.payload.output),
        ),
        check(
          reply.msg.type === 'task.snapshot',
          `task.status with unknown members was refused: ${describeMessage(reply.msg)}`,
          'task.snapshot',
          describeMessage(reply.msg),
        ),
      );
    },
  }),
];
