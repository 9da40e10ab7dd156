/** websocket profile, One session per connection (spec: bindings-websocket#one-session). */
import { type Case, defineCase } from '../../case.ts';
import { WS } from './kit.ts';
import { checkError, need, verdictOf } from '../kit.ts';
import { initPayload } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'websocket.one-session',
    title: 'A connection carries at most one session: a second handshake.init on it gets PROTOCOL_VIOLATION',
    profile: 'websocket',
    requirements: ['TAP-WS-009'],
    needs: WS,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post('handshake.init', initPayload(peer, {}));
      const r = need(await peer.reply(sent));
      return verdictOf('refused', checkError(r.msg, { code: 'PROTOCOL_VIOLATION' }, 'a second handshake.init on the connection'));
    },
  }),
];
