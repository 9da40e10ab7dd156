/** nats profile, Frames (spec: bindings-nats#frames). */
import { type Case, defineCase } from '../../case.ts';
import { natsOf } from '../connection.ts';
import { keepaliveExchange, NATS } from './kit.ts';
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
  defineCase({
    id: 'nats.open.first-seq',
    title: "The open request and reply take no Tap-Seq: the agent's first message is numbered 1 and it takes the requester's 1",
    profile: 'nats',
    requirements: ['TAP-NATS-049'],
    needs: NATS,
    budgetMs: 20_000,
    // The requester's first message: a keepalive numbered 1. An agent that counted the open request expects 2 and sees a gap.
    run: (ctx) =>
      keepaliveExchange(ctx, 20_000, (raw, { started, every }) => {
        const first = raw.seen[0];
        const lost = raw.seen.find((m) => m.control === 'close');
        const later = raw.seen.filter((m) => m.at > started + every).length;
        return verdictOf(
          "the agent's first message is Tap-Seq 1 and it took the requester's 1",
          check(first !== undefined, 'the agent published nothing on the connection', 'a keepalive', 'nothing'),
          check(first === undefined || first.seq === '1', "the agent's first message on the connection", 'Tap-Seq 1', show(first?.seq)),
          check(
            lost === undefined,
            "the agent closed the connection after the requester's first message, numbered 1 (an agent that counts the open request takes it for a gap)",
            'no close',
            `close ${lost?.code ?? ''}`,
          ),
          check(later > 0, "the agent stopped publishing after the requester's first message, numbered 1", 'keepalives go on', 'none'),
        );
      }),
  }),
  defineCase({
    id: 'nats.frames.out-subject',
    title: "The agent publishes a connection's messages on <prefix>.out.<connection>.<agent_id>, numbered 1, 2, 3 … without gaps",
    profile: 'nats',
    requirements: ['TAP-NATS-006'],
    needs: NATS,
    budgetMs: 20_000,
    run: (ctx) =>
      keepaliveExchange(ctx, 15_000, (raw, { every }) => {
        const seqs = raw.seen.map((m) => m.seq);
        const gap = seqs.findIndex((x, i) => x !== String(i + 1));
        return verdictOf(
          `${seqs.length} messages on the out subject, numbered from 1`,
          check(
            seqs.length > 0,
            `the agent published nothing on the connection's out subject in ${Math.round(2.5 * every)} ms, not even a keepalive: it publishes elsewhere, or not at all`,
            'keepalives',
            'nothing',
          ),
          check(
            gap < 0,
            "the agent's messages on the connection are not numbered 1, 2, 3 … without gaps",
            '1, 2, 3 …',
            show(seqs.slice(0, 8)),
          ),
        );
      }),
  }),
];
