/** stdio profile, Broken output (spec: shutdown#epipe). */
import { type Case, defineCase } from '../../case.ts';
import { childOf, endInput, exitedZero, STDIO } from './kit.ts';
import { need } from '../kit.ts';
import { startTask } from '../../steps.ts';
import { timingWindow } from '../../verdict.ts';

export const cases: Case[] = [
  defineCase({
    id: 'stdio.epipe',
    title: 'When nobody reads its stdout any more (EPIPE) the agent treats it as a lost transport and exits 0',
    profile: 'stdio',
    requirements: ['TAP-SHUT-017'],
    needs: { capabilities: ['tap.test.stream'], ...STDIO },
    budgetMs: 45_000,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      need(await startTask(peer, 'tap.test.stream', { count: 100000, interval_ms: 1 }));
      ctx.note("closing the read end of the agent's stdout");
      childOf(ctx, peer)?.stdout?.destroy();
      await ctx.sleep(200);
      endInput(ctx, peer);
      const exit = await peer.waitExit(timingWindow(10_000, ctx.env.timeScale).latestMs);
      return exitedZero(exit, 'the agent did not exit 0 after its output broke');
    },
  }),
];
