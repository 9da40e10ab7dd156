/** shutdown profile, Order of checks (spec: errors#order-of-checks). */
import { type Case, defineCase } from '../../case.ts';
import { check, need, verdictOf } from '../kit.ts';
import { describeMessage, startTask } from '../../steps.ts';
import { unimplemented } from '../../verdict.ts';
import { farewellFirst, nothingAfterFarewell, replyOrFarewell } from './kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'shutdown.retry-snapshot',
    title: 'During shutdown a repeat of an existing task is still answered with its snapshot',
    profile: 'shutdown',
    requirements: ['TAP-ERR-010', 'TAP-SHUT-005'],
    needs: { capabilities: ['tap.test.sleep'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const key = `sd-${peer.ids.task('k')}`;
      const t = need(await startTask(peer, 'tap.test.sleep', { ms: 600_000 }, { idempotencyKey: key }));
      const stop = await peer.post('shutdown.request', { reason: 'conformance test', grace_ms: 3000 });
      const again = await peer.post(
        'task.request',
        { capability: 'tap.test.sleep', input: { ms: 600_000 } },
        { task_id: t.taskId, idempotency_key: key },
      );
      const resp = need(await peer.reply(stop));
      if (resp.msg.type === 'shutdown.response' && resp.msg.payload.approve !== true)
        return unimplemented('the agent declined the shutdown, which it may do');
      const r = await replyOrFarewell(peer, again);
      return verdictOf(
        farewellFirst(r ? [] : ['the repeated task.request'], 1, 'snapshot'),
        r &&
          check(
            r.msg.type === 'task.snapshot',
            'a repeat of an existing task during shutdown was not answered with its snapshot',
            'task.snapshot',
            describeMessage(r.msg),
          ),
        await nothingAfterFarewell(ctx, peer),
      );
    },
  }),
];
