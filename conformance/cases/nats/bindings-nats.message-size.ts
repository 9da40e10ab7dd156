/** nats profile, Message size (spec: bindings-nats#message-size). */
import { type Case, defineCase } from '../../case.ts';
import { natsOf } from '../connection.ts';
import { NATS } from './kit.ts';
import { check, checkError, expectAlive, need, require, show, verdictOf } from '../kit.ts';

const encoder = new TextEncoder();

export const cases: Case[] = [
  defineCase({
    id: 'nats.frames.pieces',
    title: 'A frame sent in pieces marked Tap-More is joined into one message',
    profile: 'nats',
    requirements: ['TAP-NATS-008'],
    needs: { ...NATS, capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const text = 'piece '.repeat(2000);
      const m = peer.envelope('task.request', { capability: 'tap.test.echo', input: text }, { task_id: peer.ids.task() });
      ctx.note('sending a 12 KB task.request in pieces of 1000 bytes');
      await natsOf(ctx, peer).sendPieces(encoder.encode(JSON.stringify(m)), 1000);
      const r = need(
        await peer.waitFor((x) => x.msg.type === 'task.result' && x.msg.task_id === m.task_id, 'the echo of the joined request'),
      );
      return verdictOf(
        'joined',
        check(
          r.msg.payload?.output === text,
          'the echo of a request sent in pieces differs from the request',
          'the same text',
          show(r.msg.payload?.output, 80),
        ),
      );
    },
  }),
  defineCase({
    id: 'nats.frames.oversized-pieces',
    title: 'A frame joined from pieces beyond max_message_bytes gets MESSAGE_TOO_LARGE and the session stays open',
    profile: 'nats',
    requirements: ['TAP-NATS-009', 'TAP-NATS-010'],
    needs: { ...NATS, capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.session({ params: { max_message_bytes: 4096 } }));
      const m = peer.envelope('task.request', { capability: 'tap.test.echo', input: 'x'.repeat(6000) }, { task_id: peer.ids.task() });
      ctx.note('sending a 6 KB task.request over a 4096-byte limit, in pieces of 1000 bytes');
      await natsOf(ctx, peer).sendPieces(encoder.encode(JSON.stringify(m)), 1000);
      const r = need(await peer.waitFor((x) => x.msg.type === 'error', 'an error for the oversized message'));
      require(checkError(r.msg, { code: 'MESSAGE_TOO_LARGE' }, 'a request over max_message_bytes sent in pieces'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'MESSAGE_TOO_LARGE'));
    },
  }),
];
