/** core profile, handshake.ready (spec: handshake#ready). */
import { type Case, defineCase } from '../../case.ts';
import { check, checkError, expectAlive, need, require, verdictOf } from '../kit.ts';
import { handshake } from '../../steps.ts';
import { fail, pass } from '../../verdict.ts';
import { jcs } from '../../mac.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.handshake.ready-mismatch',
    title: 'handshake.ready with params other than the final ones: fatal PROTOCOL_VIOLATION and the transport closes',
    profile: 'core',
    requirements: ['TAP-HS-011', 'TAP-ERR-007'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const r = await handshake(peer, { readyParams: (p) => ({ ...p, max_concurrent_tasks: Number(p.max_concurrent_tasks) + 7 }) });
      if (r.ok)
        return fail(
          'the agent answered handshake.go to a ready whose params differ from the ack',
          'error PROTOCOL_VIOLATION (fatal)',
          'handshake.go',
        );
      const err = peer.received.find((m) => m.msg.type === 'error');
      require(checkError(err?.msg, { code: 'PROTOCOL_VIOLATION', fatal: true }, 'handshake.ready with changed params'));
      const closed = await peer.waitClosed(ctx.scaled(5000));
      return verdictOf('refused and closed', check(closed, 'the transport stayed open after the fatal error', 'closed', 'open after 5 s'));
    },
  }),
  defineCase({
    id: 'core.handshake.ready-canonical',
    title: 'handshake.ready params are compared in canonical form: reordered members are equal',
    profile: 'core',
    requirements: ['TAP-HS-010', 'TAP-HS-012'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const r = await handshake(peer, {
        readyParams: (p) => Object.fromEntries(Object.entries(p).reverse()),
      });
      if (!r.ok)
        return fail(
          `the agent refused a ready whose params equal the ack's in another member order: ${r.outcome.detail}`,
          'handshake.go',
          r.outcome.observed,
        );
      return pass(`params ${jcs(peer.state.params)} accepted in reverse member order`);
    },
  }),
  defineCase({
    id: 'core.handshake.ready-extra-member',
    title: 'handshake.ready params holding members the final params lack are not refused: unknown members are ignored',
    profile: 'core',
    requirements: ['TAP-HS-040', 'TAP-HS-010'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      // A parameter of a later minor version and an extension member, beside the final params.
      need(await handshake(peer, { readyParams: (p) => ({ ...p, keepalive_policy: 'lazy', 'x-conform-note': { n: 1 } }) }));
      return verdictOf('handshake.go', await expectAlive(peer, 'a ready with extra params members'));
    },
  }),
];
