/** core profile, handshake.ack (spec: handshake#ack). */
import { type Case, defineCase } from '../../case.ts';
import { check, need, show, verdictOf } from '../kit.ts';
import type { Outcome } from '../../verdict.ts';

/**
 * Sessions the session id case opens. A character that carries b random bits stays the same in
 * all of them with odds of 2^-b(SESSIONS-1): the last character of 16 random bytes in base64url
 * carries only 2, so with 6 sessions an agent with 128 random bits failed about once in 1,024
 * runs; with 12 it is once in four million.
 */
const SESSIONS = 12;
/** Character positions that 128 random bits need at 6 bits a character (base64url, the identifier alphabet's most). */
const MIN_VARYING = Math.ceil(128 / 6);

/**
 * How many character positions differ between some of `ids`, counted from the start and from
 * the end (the larger), so that a fixed prefix or suffix counts for nothing (spec: handshake#ack).
 */
function varyingCharacters(ids: string[]): number {
  if (ids.length < 2) return 0;
  const length = Math.min(...ids.map((id) => id.length));
  const count = (at: (id: string, i: number) => string | undefined) => {
    let n = 0;
    for (let i = 0; i < length; i++) if (new Set(ids.map((id) => at(id, i))).size > 1) n++;
    return n;
  };
  return Math.max(
    count((id, i) => id[i]),
    count((id, i) => id[id.length - 1 - i]),
  );
}

export const cases: Case[] = [
  defineCase({
    id: 'core.handshake.session-id',
    title: 'Each session gets a fresh session_id and resume_token that vary in enough characters to hold 128 random bits',
    profile: 'core',
    requirements: ['TAP-HS-006'],
    run: async (ctx) => {
      const acks: Record<string, unknown>[] = [];
      for (let i = 0; i < SESSIONS; i++) acks.push(need(await ctx.sessionWith()).hs.ack.msg.payload);
      const problems: Outcome[] = [];
      for (const member of ['session_id', 'resume_token']) {
        const values = acks.map((a) => a[member]);
        const strings = values.filter((v): v is string => typeof v === 'string');
        const varying = varyingCharacters(strings);
        const fail = check(
          strings.length === values.length && new Set(strings).size === strings.length && varying >= MIN_VARYING,
          `over ${SESSIONS} sessions the ${member}s vary in ${varying} character positions; a character carries at most 6 bits, so 128 random bits need at least ${MIN_VARYING}`,
          `${SESSIONS} different ${member}s varying in at least ${MIN_VARYING} positions`,
          show(values, 400),
        );
        if (fail) problems.push(fail);
      }
      return verdictOf(`${SESSIONS} sessions, each id and token of at least 128 random bits by their varying characters`, ...problems);
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
