/** nats profile, Frames (spec: bindings-nats#frames). */
import { type Case, defineCase } from '../../case.ts';
import { natsOf } from '../connection.ts';
import { NATS } from './kit.ts';
import { check, need, show, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'nats.frames.gap',
    title: 'A message whose Tap-Seq skips a number has no effect and the agent counts the connection lost (1006)',
    profile: 'nats',
    requirements: ['TAP-NATS-007'],
    needs: NATS,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = natsOf(ctx, peer);
      t.skipSeq();
      const mark = peer.mark();
      const sent = await peer.post('ping', {});
      const closed = await peer.waitClosed(ctx.scaled(5000));
      const pong = peer.since(mark).find((r) => r.msg.type === 'pong' && r.msg.in_reply_to === sent.id);
      return verdictOf(
        'closed with 1006, unanswered',
        check(pong === undefined, 'the agent answered a ping that arrived after a gap in Tap-Seq', 'no pong', 'a pong'),
        check(
          closed,
          'the agent did not close the connection after a gap in Tap-Seq',
          'a close control with 1006',
          'the connection stayed open',
        ),
        check(
          !closed || peer.closed?.code === 1006,
          'the agent closed the connection after a gap with the wrong code',
          '1006',
          show(peer.closed?.code),
        ),
      );
    },
  }),
];
