/** integrity profile, Forged frames over NATS (spec: bindings-nats#forged-frames). */
import { type Case, defineCase } from '../../case.ts';
import { natsOf } from '../connection.ts';
import { check, checkError, expectAlive, need, require, show, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'integrity.nats.forged-frame',
    title: 'Under integrity, an unsigned frame carrying the next Tap-Seq gets INVALID_SIGNATURE and takes no number: the session goes on',
    profile: 'integrity',
    requirements: ['TAP-NATS-047', 'TAP-INT-011'],
    // The integrity profile's, over NATS only: without the run's key it is UNIMPLEMENTED like the rest of the profile.
    needs: { binding: 'nats', integrity: true },
    run: async (ctx) => {
      const peer = need(await ctx.session({ signed: true }));
      const t = natsOf(ctx, peer);
      // What a third client of the account could publish on the connection's subject: a frame
      // without the session's signature, numbered as the harness's next message.
      const forged = peer.envelope('ping', {});
      ctx.note(`publishing an unsigned ping ${forged.message_id} with the Tap-Seq of the harness's next message`);
      t.forge(new TextEncoder().encode(JSON.stringify(forged)));
      const refusal = need(await peer.waitFor((r) => r.msg.reply_to === forged.message_id, 'the answer to the unsigned ping'));
      require(checkError(refusal.msg, { code: 'INVALID_SIGNATURE', replyTo: forged.message_id }, 'an unsigned ping'));
      // The harness's own next message carries the number the forged frame had.
      const alive = await expectAlive(peer, 'a forged frame that carried the next Tap-Seq');
      return verdictOf(
        'refused, and the connection goes on',
        alive,
        check(
          !peer.closed,
          'the agent closed the connection after a forged frame took the number of the next message',
          'the connection open',
          `closed with ${show(peer.closed?.code)}`,
        ),
      );
    },
  }),
];
