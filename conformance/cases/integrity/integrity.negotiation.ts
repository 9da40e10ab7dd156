/** integrity profile, Negotiation (spec: integrity#negotiation). */
import { type Case, defineCase } from '../../case.ts';
import { initWith, integrityInit, SIGNED, unsignedFatal } from './kit.ts';
import { check, checkError, need, require, runTask, verdictOf } from '../kit.ts';
import { jcs } from '../../mac.ts';
import { pass } from '../../verdict.ts';
import { initPayload } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'integrity.session.signed',
    title: 'With integrity agreed, the ack repeats it exactly and every message in both directions is signed',
    profile: 'integrity',
    requirements: ['TAP-INT-004', 'TAP-INT-006', 'TAP-CONF-011', 'TAP-INT-009', 'TAP-RES-005'],
    needs: { ...SIGNED, capabilities: ['tap.test.stream'] },
    run: async (ctx) => {
      const { peer, hs } = need(await ctx.sessionWith({ signed: true }));
      const key = peer.state.integrity!;
      const proposed = { alg: 'hmac-sha256', key_id: key.keyId };
      const t = need(await runTask(peer, 'tap.test.stream', { count: 3 }));
      const sent = await peer.post('task.resume', { last_sequence: 0 }, { task_id: t.taskId });
      need(await peer.reply(sent));
      await peer.barrier();
      const unsigned = peer.received.find((r) => r.msg.signature === undefined);
      return verdictOf(
        'signed throughout (each MAC verified)',
        check(
          jcs(hs.ack.msg.payload.params?.integrity) === jcs(proposed),
          'the final params do not repeat the proposed integrity exactly',
          jcs(proposed),
          jcs(hs.ack.msg.payload.params?.integrity),
        ),
        check(!unsigned, `the agent's ${unsigned?.msg.type} is unsigned`, 'a signature on every message', 'an unsigned message'),
      );
    },
  }),
  defineCase({
    id: 'integrity.handshake.unknown-key',
    title: 'A handshake.init proposing a key the agent does not hold gets AUTH_REQUIRED, unsigned and fatal, and the transport closes',
    profile: 'integrity',
    requirements: ['TAP-INT-004', 'TAP-INT-016'],
    needs: SIGNED,
    run: async (ctx) => {
      const key = ctx.env.key!;
      const { peer, reply } = await initWith(ctx, (p) => integrityInit(p, 'no-such-key', key.key), key.peer);
      await unsignedFatal(ctx, peer, reply.msg, ['AUTH_REQUIRED'], 'integrity with an unknown key_id');
      return pass('refused, unsigned, fatal, closed');
    },
  }),
  defineCase({
    id: 'integrity.handshake.no-downgrade',
    title: 'An agent holding a key for the requester refuses a handshake without integrity (AUTH_REQUIRED)',
    profile: 'integrity',
    requirements: ['TAP-INT-005'],
    needs: SIGNED,
    run: async (ctx) => {
      const key = ctx.env.key!;
      const { peer, reply } = await initWith(ctx, (p) => p.envelope('handshake.init', initPayload(p, {})), key.peer);
      require(checkError(reply.msg, { code: 'AUTH_REQUIRED', fatal: true }, `integrity "none" from ${key.peer}, which holds a key`));
      const closed = await peer.waitClosed(ctx.scaled(5000));
      return verdictOf('refused and closed', check(closed, 'the transport stayed open after the fatal AUTH_REQUIRED', 'closed', 'open'));
    },
  }),
  defineCase({
    id: 'integrity.handshake.unsigned-init',
    title: 'A handshake.init proposing integrity without a signature is refused, with an unsigned fatal error',
    profile: 'integrity',
    requirements: ['TAP-INT-006', 'TAP-INT-016'],
    needs: SIGNED,
    run: async (ctx) => {
      const key = ctx.env.key!;
      const { peer, reply } = await initWith(ctx, (p) => integrityInit(p, key.keyId), key.peer);
      await unsignedFatal(ctx, peer, reply.msg, ['INVALID_SIGNATURE', 'AUTH_REQUIRED'], 'an unsigned init proposing integrity');
      return pass('refused');
    },
  }),
];
