/** core profile, Verification (spec: integrity#verification). */
import { type Case, defineCase } from '../../case.ts';
import { expectAlive, expectError, need, require, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.envelope.signature-shape',
    title: 'A signature member of the wrong shape fails the envelope schema: INVALID_MESSAGE, not INVALID_SIGNATURE',
    profile: 'core',
    requirements: ['TAP-INT-040'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post(
        'ping',
        {},
        { signature: { alg: 'hmac-sha256', key_id: 'tap-conform.k1', value: 'too-short' } },
        { deliberate: 'a signature value that is not 43 base64url characters' },
      );
      require(await expectError(peer, sent, { code: 'INVALID_MESSAGE' }, 'a ping whose signature has the wrong shape'));
      return verdictOf('INVALID_MESSAGE; the session goes on', await expectAlive(peer, 'a malformed signature'));
    },
  }),
];
