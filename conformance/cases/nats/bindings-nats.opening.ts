/** nats profile, Opening a connection (spec: bindings-nats#opening). */
import { newConnectionId } from '../../../reference/transports/nats/index.ts';
import { type Case, defineCase } from '../../case.ts';
import { natsOf, oneSessionCase } from '../connection.ts';
import { NATS, OPEN_QUEUE_GROUP, openVerdicts, queueGroupCount } from './kit.ts';
import { check, expectAlive, need, show, verdictOf } from '../kit.ts';
import { harnessError, notTested, skipped } from '../../verdict.ts';

export const cases: Case[] = [
  defineCase({
    id: 'nats.open.first-frame',
    title: 'A frame sent as soon as the open request is answered reaches the agent: the handshake completes',
    profile: 'nats',
    requirements: ['TAP-NATS-003', 'TAP-NATS-006'],
    needs: NATS,
    run: async (ctx) => {
      // The harness sends handshake.init right after Tap-Open: ok; a late subscription would lose it.
      const peer = need(await ctx.session());
      return verdictOf('the handshake completed', await expectAlive(peer, 'the handshake'));
    },
  }),
  defineCase({
    id: 'nats.open.connection-id',
    title: 'An open request whose connection id is not a token, or names an open connection, is refused with 1008',
    profile: 'nats',
    requirements: ['TAP-NATS-004'],
    needs: NATS,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const open = natsOf(ctx, peer).connectionId;
      if (!open) return harnessError('the harness transport has no connection id');
      const [bad, taken, fresh] = await openVerdicts(
        ctx,
        ['not.a.token', open, newConnectionId()].map((connection) => ({ connection, keepaliveMs: '1000' })),
      );
      return verdictOf(
        'refused with 1008; a fresh id is accepted',
        check(bad === '1008', 'an open request with the connection id "not.a.token" was not refused with 1008', '1008', show(bad)),
        check(taken === '1008', 'an open request naming a connection already open was not refused with 1008', '1008', show(taken)),
        check(fresh === 'ok', 'an open request with a fresh connection id was not accepted', 'ok', show(fresh)),
        await expectAlive(peer, 'the refused open requests'),
      );
    },
  }),
  defineCase({
    id: 'nats.open.queue-group',
    title: 'The agent takes open requests in the queue group tap-agents: each request reaches it or another member, never both',
    profile: 'nats',
    requirements: ['TAP-NATS-048'],
    needs: NATS,
    // Its member of the queue group would take the open requests of cases running beside it.
    exclusive: true,
    run: async (ctx) => {
      const n = 16;
      const count = await queueGroupCount(ctx, n);
      // An agent that answers no open request at all, late in a run, has stopped taking connections: nothing to judge.
      if (count.agent === 0 && count.member < n)
        return skipped(
          `the agent answered none of the ${count.sent - count.member} open requests that reached it at this point of the run (an earlier case may have begun its shutdown); run this case alone (--only nats.open.queue-group) to judge its queue group`,
        );
      // Fewer answers than requests says nothing of the group: an answer was late or lost.
      if (count.member + count.agent < n)
        return notTested(
          `of ${n} open requests, ${count.member} reached the harness's member of ${OPEN_QUEUE_GROUP} and the agent answered ${count.agent}: the rest got no answer in time, so the case cannot tell whether the agent shares the group`,
        );
      return verdictOf(
        `each of ${n} open requests reached one member of ${OPEN_QUEUE_GROUP}`,
        check(
          count.member + count.agent === n,
          `of ${n} open requests, ${count.member} reached the harness's member of the queue group ${OPEN_QUEUE_GROUP} and the agent answered ${count.agent}: the agent is not in the group ${OPEN_QUEUE_GROUP}, so every process of its id in that group would get a copy of its requests as well`,
          `${n} in all`,
          `${count.member + count.agent}`,
        ),
      );
    },
  }),
  oneSessionCase(
    { profile: 'nats', needs: NATS },
    {
      id: 'nats.one-session',
      title: 'A connection carries at most one session: a second handshake.init on it gets PROTOCOL_VIOLATION',
      requirements: ['TAP-NATS-005'],
    },
  ),
];
