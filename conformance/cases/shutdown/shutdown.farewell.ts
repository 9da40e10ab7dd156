/** shutdown profile, Farewell (spec: shutdown#farewell). */
import { type Case, defineCase } from '../../case.ts';
import { farewellAndClose, requestShutdown, SLEEP } from './kit.ts';
import { need, verdictOf } from '../kit.ts';
import { startTask } from '../../steps.ts';
import { checkSequence } from '../farewell.ts';

export const cases: Case[] = [
  defineCase({
    id: 'shutdown.farewell-last',
    title: "Nothing follows a peer's session.farewell",
    profile: 'shutdown',
    requirements: ['TAP-SHUT-011', 'TAP-SHUT-008'],
    needs: SLEEP,
    // Two sleeps ended by the shutdown.
    tasks: 2,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const ids = [
        need(await startTask(peer, 'tap.test.sleep', { ms: 600_000 })).taskId,
        need(await startTask(peer, 'tap.test.sleep', { ms: 50 })).taskId,
      ];
      const r = await requestShutdown(peer, 300);
      if ('verdict' in r) return r;
      const { farewell } = await farewellAndClose(ctx, peer, ctx.scaled(3000));
      await peer.waitClosed(ctx.scaled(2000));
      return verdictOf('nothing after the farewell', checkSequence(peer, ids, farewell));
    },
  }),
];
