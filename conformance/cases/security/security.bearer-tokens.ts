/**
 * security profile, Bearer tokens (spec: security#bearer-tokens): an agent that requires tokens in
 * the JWT form refuses an expired one, one of another issuer or audience, and one signed by another
 * key; a token's subject is the principal.
 */
import type { Case } from '../../case.ts';
import { principalCase, refusedTokensCase, subject, TOKENS, tokenSession } from './kit.ts';

export const cases: Case[] = [
  refusedTokensCase(
    {
      id: 'security.token.expired',
      title: 'A token that expired an hour ago is refused with AUTH_REQUIRED',
      requirements: ['TAP-SEC-009', 'TAP-HS-020'],
    },
    (ctx) => [[{ sub: subject(ctx, 'expired'), exp: Math.floor(Date.now() / 1000) - 3600 }, 'with an expired token']],
  ),
  refusedTokensCase(
    {
      id: 'security.token.foreign',
      title: 'A token of another issuer, or for another audience, is refused with AUTH_REQUIRED',
      requirements: ['TAP-SEC-009'],
    },
    (ctx) => {
      const issuer = ctx.env.security!.tokens!;
      return [
        [{ sub: subject(ctx, 'iss'), iss: `${issuer.issuer}.elsewhere` }, 'with a token of another issuer'],
        [{ sub: subject(ctx, 'aud'), aud: `${issuer.audience}.elsewhere` }, 'with a token for another audience'],
      ];
    },
    'both refused',
  ),
  refusedTokensCase(
    {
      id: 'security.token.bad-signature',
      title: "A token signed by a key other than the issuer's is refused with AUTH_REQUIRED",
      requirements: ['TAP-SEC-009'],
    },
    (ctx) => [[{ sub: subject(ctx, 'forged'), forged: true }, 'with a token signed by another key']],
  ),
  principalCase(
    {
      id: 'security.token.principal',
      title: "A token's subject is the principal: tokens of one subject share tasks, another subject sees none",
      requirements: ['TAP-SEC-010', 'TAP-AUTH-003'],
    },
    { ...TOKENS, binding: 'websocket' },
    'token subject',
    async (ctx) => {
      const sub = subject(ctx, 'same');
      return {
        owner: await tokenSession(ctx, sub),
        // Another token of the same subject: a fresh signature, other scopes.
        same: await tokenSession(ctx, sub, ''),
        other: await tokenSession(ctx, subject(ctx, 'other')),
      };
    },
  ),
];
