/** websocket profile, Frames (spec: bindings-websocket#frames). */
import { type Case, defineCase } from '../../case.ts';
import { WS } from './kit.ts';
import { checkError, expectAlive, need, require, verdictOf } from '../kit.ts';
import { fail } from '../../verdict.ts';

export const cases: Case[] = [
  defineCase({
    id: 'websocket.frames.binary',
    title: 'A binary message gets MALFORMED_MESSAGE, has no effect, and the connection stays open',
    profile: 'websocket',
    requirements: ['TAP-WS-005'],
    needs: WS,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const mark = peer.mark();
      await peer.sendRaw(new TextEncoder().encode(JSON.stringify(peer.envelope('ping', {}))), 'a ping in a binary frame', true);
      const r = need(await peer.waitFor((m) => m.index >= mark && m.msg.type !== 'pong', 'an error for the binary frame'));
      require(checkError(r.msg, { code: 'MALFORMED_MESSAGE' }, 'a binary frame'));
      return verdictOf('refused; still open', await expectAlive(peer, 'a binary frame'));
    },
  }),
  defineCase({
    id: 'websocket.frames.invalid-utf8',
    title: 'A text message that is not valid UTF-8 is answered MALFORMED_MESSAGE rather than closing with 1007',
    profile: 'websocket',
    requirements: ['TAP-WS-006'],
    needs: WS,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const mark = peer.mark();
      await peer.sendRaw(new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]), 'invalid UTF-8 in a text frame');
      const r = await peer.waitFor((m) => m.index >= mark && m.msg.type === 'error', 'an error for invalid UTF-8');
      if (!r.ok)
        return fail(
          `the agent did not answer invalid UTF-8 with MALFORMED_MESSAGE${peer.closed ? ` (it closed with ${peer.closed.code})` : ''}`,
          'MALFORMED_MESSAGE',
          r.outcome.observed,
        );
      return verdictOf('MALFORMED_MESSAGE', checkError(r.value.msg, { code: 'MALFORMED_MESSAGE' }, 'invalid UTF-8'));
    },
  }),
];
