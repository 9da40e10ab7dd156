/** core profile, Errors before key agreement (spec: integrity#unsigned-errors). */
import { type Case, defineCase } from '../../case.ts';
import { check, checkError, expectAlive, need, require, show, verdictOf } from '../kit.ts';
import { initPayload } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.handshake.later-init-integrity',
    title: 'A later handshake.init proposing integrity gets PROTOCOL_VIOLATION, not fatal, and the session goes on',
    profile: 'core',
    requirements: ['TAP-INT-041', 'TAP-HS-015'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const payload = initPayload(peer, { params: { integrity: { alg: 'hmac-sha256', key_id: 'tap-conform.no-such-key' } } });
      const sent = await peer.post('handshake.init', payload);
      const r = need(await peer.reply(sent));
      require(checkError(r.msg, { code: 'PROTOCOL_VIOLATION', replyTo: sent.message_id }, 'a later init proposing integrity'));
      require(
        check(r.msg.payload.fatal !== true, 'the PROTOCOL_VIOLATION is marked fatal', 'fatal absent or false', show(r.msg.payload.fatal)),
      );
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'a later init proposing integrity'));
    },
  }),
];
