/** core profile, handshake.ack (spec: handshake#ack). */
import { type Case, defineCase } from '../../case.ts';
import { check, need, show, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.handshake.session-id',
    title: 'Each session gets a fresh session_id of at least 128 bits and its own resume_token',
    profile: 'core',
    requirements: ['TAP-HS-006'],
    run: async (ctx) => {
      const a = need(await ctx.sessionWith()).hs.ack.msg.payload;
      const b = need(await ctx.sessionWith()).hs.ack.msg.payload;
      const short = [a.session_id, b.session_id].find((s: string) => typeof s !== 'string' || s.length < 22);
      return verdictOf(
        'two sessions, two ids, two tokens',
        check(
          short === undefined,
          'a session_id shorter than 22 base64url characters cannot hold 128 random bits',
          '≥ 22 characters',
          show(short),
        ),
        check(a.session_id !== b.session_id, 'two sessions got the same session_id', 'different session ids', a.session_id),
        check(a.resume_token !== b.resume_token, 'two sessions got the same resume_token', 'different resume tokens', a.resume_token),
        check(
          typeof a.resume_token === 'string' && a.resume_token.length >= 22,
          'a resume_token this short cannot hold 128 random bits',
          '≥ 22 characters',
          show(a.resume_token),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.handshake.granted-missing',
    title: 'Every required capability is in exactly one of granted and missing, and the handshake completes anyway',
    profile: 'core',
    requirements: ['TAP-HS-007', 'TAP-HS-008'],
    run: async (ctx) => {
      const offered: string[] = (ctx.card?.capabilities ?? []).map((c: { name: string }) => c.name);
      const requires = [...offered.slice(0, 2), 'x-conformance.not-a-capability', 'zz.nothing.here'];
      const s = need(await ctx.sessionWith({ requires }));
      const { granted, missing } = s.hs.ack.msg.payload;
      const problems: string[] = [];
      for (const name of requires) {
        const n = Number(granted.includes(name)) + Number(missing.includes(name));
        if (n !== 1) problems.push(`${name} appears ${n} times`);
      }
      for (const name of offered.slice(0, 2)) if (!granted.includes(name)) problems.push(`${name} is offered in the card but not granted`);
      for (const name of ['x-conformance.not-a-capability', 'zz.nothing.here'])
        if (!missing.includes(name)) problems.push(`${name} is not in missing`);
      return verdictOf(
        'granted and missing partition requires',
        check(
          problems.length === 0,
          problems.join('; '),
          'each name in exactly one list',
          `granted ${show(granted)}, missing ${show(missing)}`,
        ),
      );
    },
  }),
];
