/** core profile, Another minor version after the ack (spec: versioning#stray-minor). */
import { type Case, defineCase } from '../../case.ts';
import { check, checkError, expectAlive, need, require, show, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.version.after-ack',
    title: 'After the ack, a message in another minor version gets UNSUPPORTED_VERSION, not fatal, and the session goes on',
    profile: 'core',
    requirements: ['TAP-VER-040', 'TAP-VER-002', 'TAP-ENV-005'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const m = peer.envelope('ping', {}, { protocol: 'tap/1.3' });
      await peer.send(m);
      const r = need(await peer.reply(m));
      require(checkError(r.msg, { code: 'UNSUPPORTED_VERSION' }, 'a ping in tap/1.3 in a 1.0 session'));
      require(
        check(
          r.msg.payload.fatal !== true,
          'one message in another minor version ended the session',
          'fatal absent or false',
          show(r.msg.payload.fatal),
        ),
      );
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'a message in tap/1.3'));
    },
  }),
];
