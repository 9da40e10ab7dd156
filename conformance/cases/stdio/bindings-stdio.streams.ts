/** stdio profile, Standard output and standard error (spec: bindings-stdio#streams). */
import { type Case, defineCase } from '../../case.ts';
import { endInput, STDIO } from './kit.ts';
import { check, need, runTask, verdictOf } from '../kit.ts';
import { timingWindow } from '../../verdict.ts';
import { count } from '../../report/model.ts';

export const cases: Case[] = [
  defineCase({
    id: 'stdio.stdout.protocol-only',
    title: 'The agent writes nothing but TAP messages on stdout while it works',
    profile: 'stdio',
    requirements: ['TAP-STDIO-003', 'TAP-STDIO-001'],
    needs: { capabilities: ['tap.test.stream', 'tap.test.fail'], ...STDIO },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      need(await runTask(peer, 'tap.test.stream', { count: 3 }));
      need(await runTask(peer, 'tap.test.fail', { code: 'INTERNAL_ERROR' }));
      await peer.sendText('{oops', 'malformed input, to provoke logging');
      await peer.barrier();
      endInput(ctx, peer);
      await peer.waitExit(timingWindow(10_000, ctx.env.timeScale).latestMs);
      return verdictOf(
        'stdout clean',
        check(
          ctx.findings.nonProtocol === 0,
          `${count(ctx.findings.nonProtocol, 'non-protocol line')} on stdout`,
          'only TAP messages',
          count(ctx.findings.nonProtocol, 'other line'),
        ),
      );
    },
  }),
];
