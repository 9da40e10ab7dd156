/** websocket profile, Message size (spec: bindings-websocket#message-size). */
import { type Case, defineCase } from '../../case.ts';
import { WS } from './kit.ts';
import { checkError, expectAlive, need, require, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'websocket.size.oversized',
    title: 'A frame above max_message_bytes but within the hard ceiling gets MESSAGE_TOO_LARGE and the session survives',
    profile: 'websocket',
    requirements: ['TAP-WS-007', 'TAP-LIM-001'],
    needs: WS,
    run: async (ctx) => {
      const peer = need(await ctx.session({ params: { max_message_bytes: 4096 } }));
      const m = peer.envelope('ping', { 'x-padding': 'p'.repeat(6000) });
      await peer.send(m, { deliberate: 'a 6 KB frame over a 4096-byte limit' });
      const r = need(await peer.waitFor((x) => x.msg.type === 'error', 'an error for the oversized frame'));
      require(checkError(r.msg, { code: 'MESSAGE_TOO_LARGE' }, 'a frame over max_message_bytes'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'MESSAGE_TOO_LARGE'));
    },
  }),
];
