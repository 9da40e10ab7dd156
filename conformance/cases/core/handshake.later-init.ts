/** core profile, Later handshake.init (spec: handshake#later-init). */
import { type Case, defineCase } from '../../case.ts';
import { expectAlive, expectError, need, require, verdictOf } from '../kit.ts';
import { harnessCard, initPayload } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.handshake.later-init-star',
    title: 'A later handshake.init naming "*" and no session gets PROTOCOL_VIOLATION; one from a stranger gets IDENTITY_MISMATCH',
    profile: 'core',
    requirements: ['TAP-HS-041'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { session_id: _s, ...later } = peer.envelope('handshake.init', { ...initPayload(peer, {}), requires: ['x.other'] });
      const sent = await peer.send({ ...later, target: '*' });
      require(await expectError(peer, sent, { code: 'PROTOCOL_VIOLATION' }, 'a later init with target "*" and no session_id'));
      const strangerId = `${peer.state.selfId}.stranger`;
      const { session_id: _t, ...other } = peer.envelope('handshake.init', { ...initPayload(peer, {}), agent: harnessCard(strangerId) });
      const stranger = await peer.send({ ...other, source: strangerId, target: '*' });
      require(await expectError(peer, stranger, { code: 'IDENTITY_MISMATCH' }, 'a later init from another source'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'two later inits'));
    },
  }),
  defineCase({
    id: 'core.handshake.later-init-other-target',
    title:
      'A later handshake.init from the bound requester naming another agent as target gets IDENTITY_MISMATCH, as any message not addressed to the agent',
    profile: 'core',
    requirements: ['TAP-HS-041', 'TAP-HS-003', 'TAP-ERR-010'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { session_id: _s, ...later } = peer.envelope('handshake.init', { ...initPayload(peer, {}), requires: ['x.other'] });
      // Step 7 excuses an init's "*" target and missing session_id, not a target naming another agent (TAP-HS-003).
      const sent = await peer.send({ ...later, target: 'someone.else' }, { deliberate: 'a later init naming another agent' });
      require(await expectError(peer, sent, { code: 'IDENTITY_MISMATCH' }, 'a later init from the bound requester naming another agent'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'a later init naming another agent'));
    },
  }),
];
