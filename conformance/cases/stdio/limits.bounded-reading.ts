/** stdio profile, Bounded reading (spec: limits#bounded-reading). */
import { type Case, defineCase } from '../../case.ts';
import { STDIO } from './kit.ts';
import { checkError, expectAlive, need, require, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'stdio.framing.oversized-line',
    title: 'A line longer than max_message_bytes gets MESSAGE_TOO_LARGE and the session goes on',
    profile: 'stdio',
    requirements: ['TAP-LIM-003', 'TAP-LIM-001'],
    needs: STDIO,
    run: async (ctx) => {
      const peer = need(await ctx.session({ params: { max_message_bytes: 4096 } }));
      const m = peer.envelope('ping', { 'x-padding': 'p'.repeat(2_000_000) });
      await peer.send(m, { deliberate: 'a 2 MB line over a 4096-byte limit' });
      const r = need(await peer.waitFor((x) => x.msg.type === 'error', 'an error for the oversized line', ctx.scaled(10_000)));
      require(checkError(r.msg, { code: 'MESSAGE_TOO_LARGE' }, 'a 2 MB line'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'MESSAGE_TOO_LARGE'));
    },
  }),
];
