/** core profile, handshake.init (spec: handshake#init). */
import { type Case, defineCase } from '../../case.ts';
import { check, checkError, need, require, verdictOf } from '../kit.ts';
import { initOnly } from './kit.ts';
import { handshake, harnessCard, initPayload } from '../../steps.ts';
import { fail, pass } from '../../verdict.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.handshake.requester-lists-versions',
    title: 'A requester listing an older version too is served in the version they share',
    profile: 'core',
    spec: 'handshake#init',
    reason: "the case varies the versions of handshake.init (Init); the rule it checks is version negotiation's (TAP-HS-004)",
    requirements: ['TAP-HS-004', 'TAP-HS-002'],
    run: async (ctx) => {
      const s = need(await ctx.sessionWith({ versions: ['1.0', '1.1'] }));
      const v = s.hs.ack.msg.payload.version;
      return verdictOf(
        `chose ${v}`,
        check(v === '1.0' || v === '1.1', `the agent chose ${v}, which the requester did not offer`, '1.0 or 1.1', String(v)),
      );
    },
  }),
  defineCase({
    id: 'core.handshake.identity-source',
    title: "A handshake.init whose source differs from its card's agent_id gets IDENTITY_MISMATCH and no session",
    profile: 'core',
    requirements: ['TAP-HS-003', 'TAP-HS-021'],
    run: async (ctx) => {
      const { peer, sent, reply } = await initOnly(ctx, (p) => ({ ...initPayload(p, {}), agent: harnessCard('somebody-else') }));
      require(
        checkError(
          reply.msg,
          { code: 'IDENTITY_MISMATCH', replyTo: sent.message_id, registryRetryable: true },
          'init with source ≠ agent.agent_id',
        ),
      );
      if (peer.closed) return pass('refused (and the connection closed)');
      const again = await handshake(peer);
      return verdictOf(
        'refused without creating a session',
        again.ok
          ? null
          : fail(`a correct handshake after the refused one failed: ${again.outcome.detail}`, 'a session', again.outcome.observed),
      );
    },
  }),
  defineCase({
    id: 'core.handshake.identity-target',
    title: 'A handshake.init whose target is neither "*" nor the agent gets IDENTITY_MISMATCH',
    profile: 'core',
    requirements: ['TAP-HS-003'],
    run: async (ctx) => {
      const { sent, reply } = await initOnly(ctx, undefined, { target: 'not-this-agent' });
      return verdictOf(
        'refused',
        checkError(reply.msg, { code: 'IDENTITY_MISMATCH', replyTo: sent.message_id }, 'init with target "not-this-agent"'),
      );
    },
  }),
];
