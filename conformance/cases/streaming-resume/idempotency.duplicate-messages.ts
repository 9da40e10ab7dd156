/** streaming-resume profile, Duplicate messages (spec: idempotency#duplicate-messages). */
import { type Case, defineCase } from '../../case.ts';
import { check, need, show, verdictOf } from '../kit.ts';
import { collectUntilResult, startTask } from '../../steps.ts';
import { reconnect } from './kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'resume.duplicates-span-connections',
    title: 'Duplicate detection spans the connections of a session: a request repeated after a resume is answered with the original reply',
    profile: 'streaming-resume',
    requirements: ['TAP-IDEM-002'],
    needs: { capabilities: ['tap.test.counter'], binding: 'websocket' },
    run: async (ctx) => {
      const old = need(await ctx.session());
      const key = `dup-${old.ids.task()}`;
      const req = old.envelope('task.request', { capability: 'tap.test.counter', input: { key } }, { task_id: old.ids.task() });
      await old.send(req);
      const first = need(await old.reply(req));
      need(await collectUntilResult(old, req.task_id!));
      const { peer } = await reconnect(ctx, old, []);
      const mark = peer.mark();
      await peer.send({ ...req, session_id: peer.state.sessionId });
      const again = need(await peer.waitFor((m) => m.index >= mark && m.msg.reply_to === req.message_id, 'the original reply re-sent'));
      const probe = need(await startTask(peer, 'tap.test.counter', { key }));
      const r = need(await collectUntilResult(peer, probe.taskId));
      return verdictOf(
        'the duplicate had no second effect',
        check(
          again.text === first.text,
          'the reply to the repeated request is not the original, byte for byte',
          first.text.slice(0, 200),
          again.text.slice(0, 200),
        ),
        check(
          r.result.msg.payload.output?.count === 2,
          'the counter shows the repeated request ran again',
          'count 2 (two distinct requests)',
          show(r.result.msg.payload.output),
        ),
      );
    },
  }),
];
