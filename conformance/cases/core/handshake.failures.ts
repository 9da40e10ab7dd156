/** core profile, Failed handshakes (spec: handshake#failures). */
import { type Case, defineCase } from '../../case.ts';
import { initOnly, strangerInit } from './kit.ts';
import { handshake } from '../../steps.ts';
import { check, need, verdictOf, wrongReply } from '../kit.ts';
import { pass } from '../../verdict.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.handshake.fresh-after-error',
    title: 'After a non-fatal error answering handshake.init the requester can start again on the same transport',
    profile: 'core',
    requirements: ['TAP-HS-021'],
    run: async (ctx) => {
      const { peer, reply } = await initOnly(ctx, strangerInit);
      if (reply.msg.type !== 'error') return wrongReply('init with a mismatched card', 'error IDENTITY_MISMATCH', reply.msg);
      if (reply.msg.payload.fatal === true) {
        const closed = await peer.waitClosed(ctx.scaled(5000));
        return verdictOf(
          'the error was fatal and the transport closed',
          check(closed, 'a fatal error did not close the transport', 'closed', 'open'),
        );
      }
      need(await handshake(peer));
      return pass('a new handshake.init succeeded after the error');
    },
  }),
];
