/** shutdown profile, Signals (spec: shutdown#signals). */
import { type Case, defineCase } from '../../case.ts';
import { farewellAndClose, farewellFirst, replyOrFarewell, SLEEP } from './kit.ts';
import { check, need, verdictOf } from '../kit.ts';
import { describeMessage, startTask } from '../../steps.ts';
import { unimplemented } from '../../verdict.ts';
import { checkSequence } from '../farewell.ts';

export const cases: Case[] = [
  defineCase({
    id: 'shutdown.second-request',
    title: 'A second shutdown.request during shutdown is approved and starts no second sequence',
    profile: 'shutdown',
    requirements: ['TAP-SHUT-015'],
    needs: SLEEP,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.sleep', { ms: 600_000 }));
      const a = await peer.post('shutdown.request', { reason: 'first', grace_ms: 1000 });
      const b = await peer.post('shutdown.request', { reason: 'second', grace_ms: 1000 });
      const ra = need(await peer.reply(a));
      if (ra.msg.type === 'shutdown.response' && ra.msg.payload.approve !== true)
        return unimplemented('the agent declined the shutdown, which it may do');
      const rb = await replyOrFarewell(peer, b);
      const { farewell } = await farewellAndClose(ctx, peer, ctx.scaled(5000));
      await peer.waitClosed(ctx.scaled(2000));
      const farewells = peer.received.filter((r) => r.msg.type === 'session.farewell' && !r.resent).length;
      const handoffs = peer.received.filter((r) => r.msg.type === 'task.handoff' && !r.resent).length;
      return verdictOf(
        farewellFirst(rb ? [] : ['the second shutdown.request'], 1, 'one sequence'),
        rb &&
          check(
            rb.msg.type === 'shutdown.response' && rb.msg.payload.approve === true,
            'the second shutdown.request was not answered with approve: true',
            'shutdown.response approve true',
            describeMessage(rb.msg),
          ),
        check(
          farewells === 1 && handoffs <= 1,
          'a second shutdown sequence ran',
          'one farewell, at most one hand-off per task',
          `${farewells} farewells, ${handoffs} hand-offs`,
        ),
        checkSequence(peer, [t.taskId], farewell),
      );
    },
  }),
];
