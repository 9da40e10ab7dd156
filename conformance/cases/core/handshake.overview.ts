/** core profile, Overview (spec: handshake#overview). */
import { type Case, defineCase } from '../../case.ts';
import { check, need, show, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.handshake.complete',
    title: 'The agent completes the four-step handshake: init → ack → ready → go',
    profile: 'core',
    spec: 'handshake#overview',
    reason: 'the case walks the whole handshake of the Overview; the rules it checks are those of handshake.go and the session id',
    requirements: ['TAP-HS-012', 'TAP-ENV-012', 'TAP-ENV-011'],
    run: async (ctx) => {
      const { hs } = need(await ctx.sessionWith());
      const ack = hs.ack.msg;
      const p = ack.payload;
      return verdictOf(
        'init → ack → ready → go completed',
        check(
          ack.reply_to === hs.init.message_id,
          'handshake.ack does not answer the init',
          `reply_to ${hs.init.message_id}`,
          `reply_to ${ack.reply_to}`,
        ),
        check(p.resumed === false, 'a fresh session is acknowledged with resumed: true', 'resumed: false', show(p.resumed)),
        check(
          hs.go?.msg.session_id === p.session_id,
          'handshake.go does not carry the session id of the ack',
          p.session_id,
          show(hs.go?.msg.session_id),
        ),
        check(
          ack.session_id === undefined || ack.session_id === p.session_id,
          'the envelope session_id of handshake.ack differs from its payload',
          `session_id ${p.session_id}`,
          `session_id ${ack.session_id}`,
        ),
      );
    },
  }),
];
