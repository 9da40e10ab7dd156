/** streaming-resume profile, Stream ownership (spec: resume#attachment). */
import { type Case, defineCase } from '../../case.ts';
import { STREAM } from './kit.ts';
import { check, checkError, need, verdictOf } from '../kit.ts';
import { collectUntilResult, startTask } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'resume.attachment.same-principal',
    title:
      "A task's live stream goes only to the session that created it; a task.resume from another session of the same principal gets PROTOCOL_VIOLATION",
    profile: 'streaming-resume',
    requirements: ['TAP-RES-006', 'TAP-RES-007'],
    needs: { ...STREAM, binding: 'websocket', integrity: true },
    run: async (ctx) => {
      const a = need(await ctx.session({ signed: true }));
      const b = need(await ctx.session({ signed: true }));
      const t = need(await startTask(a, 'tap.test.stream', { count: 10, interval_ms: 40 }));
      const mark = b.mark();
      const sent = await b.post('task.resume', { last_sequence: 0 }, { task_id: t.taskId });
      const r = need(await b.reply(sent));
      need(await collectUntilResult(a, t.taskId, ctx.scaled(10_000)));
      await b.barrier();
      const leaked = b.sinceHere(mark).filter((m) => m.msg.task_id === t.taskId && m.msg.sequence !== undefined);
      return verdictOf(
        'the stream stayed with its session',
        checkError(r.msg, { code: 'PROTOCOL_VIOLATION', taskId: t.taskId }, 'task.resume from another session of the same principal'),
        check(leaked.length === 0, `${leaked.length} stream messages of the task reached the other session`, 'none', `${leaked.length}`),
      );
    },
  }),
];
