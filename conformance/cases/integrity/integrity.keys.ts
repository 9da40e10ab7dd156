/** integrity profile, Keys (spec: integrity#keys). */
import { type Case, defineCase } from '../../case.ts';
import { initWith, integrityInit, SIGNED, unsignedFatal } from './kit.ts';
import { pass } from '../../verdict.ts';
import { checkError, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'integrity.handshake.key-bound',
    title: 'A handshake.init signed with a key bound to another agent id gets AUTH_REQUIRED, unsigned and fatal',
    profile: 'integrity',
    requirements: ['TAP-INT-008', 'TAP-INT-016'],
    needs: SIGNED,
    run: async (ctx) => {
      const key = ctx.env.key!;
      const { peer, reply } = await initWith(ctx, (p) => integrityInit(p, key.keyId, key.key), 'tap-conform.intruder');
      await unsignedFatal(ctx, peer, reply.msg, ['AUTH_REQUIRED'], `the key of ${key.peer} used by another agent id`);
      return pass('refused');
    },
  }),
  defineCase({
    id: 'integrity.key.too-short',
    title: 'A pre-shared key shorter than 32 bytes is never accepted',
    profile: 'integrity',
    requirements: ['TAP-INT-007'],
    needs: { binding: 'stdio', integrity: true },
    run: async (ctx) => {
      const short = new Uint8Array(16).fill(7);
      const peerId = ctx.env.key!.peer;
      const c = await ctx.connect({
        selfId: peerId,
        env: { TAP_HMAC_KEY_ID: 'short-key', TAP_HMAC_KEY: Buffer.from(short).toString('base64url'), TAP_HMAC_PEER: peerId },
      });
      if (!c.ok) return pass('the agent refused to start with a 16-byte key');
      const peer = c.value;
      const m = integrityInit(peer, 'short-key', short);
      await peer.send(m, { sign: false });
      const r = await peer.reply(m);
      if (!r.ok) {
        const exit = await peer.waitExit(ctx.scaled(2000));
        return exit && exit.code !== 0 ? pass(`the agent refused to run with a 16-byte key (exit ${exit.code})`) : r.outcome;
      }
      return verdictOf('refused', checkError(r.value.msg, { code: 'AUTH_REQUIRED', fatal: true }, 'a session signed with a 16-byte key'));
    },
  }),
];
