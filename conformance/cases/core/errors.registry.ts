/** core profile, Registry (spec: errors#registry). */
import { type Case, defineCase } from '../../case.ts';
import { expectAlive, need, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.errors.unknown-code-accepted',
    title: 'An error with a code the agent does not know does not end the session',
    profile: 'core',
    requirements: ['TAP-ERR-002', 'TAP-ERR-006'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      await peer.post('error', { code: 'A_CODE_FROM_TAP_1_9', message: 'future', retryable: true, fatal: false });
      return verdictOf('the session goes on', await expectAlive(peer, 'an error with an unknown code'));
    },
  }),
];
