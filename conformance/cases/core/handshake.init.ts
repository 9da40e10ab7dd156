/** core profile, handshake.init (spec: handshake#init). */
import { type Case, type CaseHead, defineCase } from '../../case.ts';
import { check, checkError, need, require, verdictOf } from '../kit.ts';
import { initOnly, strangerInit } from './kit.ts';
import { handshake } from '../../steps.ts';
import { fail, pass } from '../../verdict.ts';

/**
 * A handshake.init that forges its source (it carries another agent's card) or its target: the
 * agent refuses it with IDENTITY_MISMATCH; after a forged source, a correct handshake still
 * succeeds on the same transport unless the agent closed it (no session was made).
 */
function forgedInitCase(forge: 'source' | 'target', head: CaseHead): Case {
  return defineCase({
    ...head,
    profile: 'core',
    run: async (ctx) => {
      if (forge === 'target') {
        const { sent, reply } = await initOnly(ctx, undefined, { target: 'not-this-agent' });
        return verdictOf(
          'refused',
          checkError(reply.msg, { code: 'IDENTITY_MISMATCH', replyTo: sent.message_id }, 'init with target "not-this-agent"'),
        );
      }
      const { peer, sent, reply } = await initOnly(ctx, strangerInit);
      require(checkError(reply.msg, { code: 'IDENTITY_MISMATCH', replyTo: sent.message_id }, 'init with source ≠ agent.agent_id'));
      if (peer.closed) return pass('refused (and the connection closed)');
      const again = await handshake(peer);
      return verdictOf(
        'refused without creating a session',
        again.ok
          ? null
          : fail(`a correct handshake after the refused one failed: ${again.outcome.detail}`, 'a session', again.outcome.observed),
      );
    },
  });
}

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
  forgedInitCase('source', {
    id: 'core.handshake.identity-source',
    title: "A handshake.init whose source differs from its card's agent_id gets IDENTITY_MISMATCH and no session",
    requirements: ['TAP-HS-003', 'TAP-HS-021'],
  }),
  forgedInitCase('target', {
    id: 'core.handshake.identity-target',
    title: 'A handshake.init whose target is neither "*" nor the agent gets IDENTITY_MISMATCH',
    requirements: ['TAP-HS-003'],
  }),
];
