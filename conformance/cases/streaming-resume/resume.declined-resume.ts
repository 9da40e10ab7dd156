/** streaming-resume profile, Declined resume (spec: resume#declined-resume). */
import { type Case, defineCase } from '../../case.ts';
import { check, need, require, show, verdictOf } from '../kit.ts';
import { handshake } from '../../steps.ts';
import { reconnect } from './kit.ts';
import { fail } from '../../verdict.ts';

export const cases: Case[] = [
  defineCase({
    id: 'resume.declined',
    title: 'A resume with a wrong token is declined: a new session_id, resumed false, and nothing revealed',
    profile: 'streaming-resume',
    requirements: ['TAP-RES-012'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const fake = need(
        await handshake(peer, {
          resume: {
            session_id: 'AAAAAAAAAAAAAAAAAAAAAAAA',
            resume_token: 'not-the-token-0000',
            tasks: [{ task_id: 'nothing-here', last_sequence: 0 }],
          },
        }),
      );
      const p = fake.ack.msg.payload;
      return verdictOf(
        'declined with a fresh session',
        check(p.resumed === false, 'a resume of a session that does not exist was granted', 'resumed false', show(p.resumed)),
        check(
          p.session_id !== 'AAAAAAAAAAAAAAAAAAAAAAAA',
          'the declined resume reused the named session_id',
          'a new session_id',
          p.session_id,
        ),
      );
    },
  }),
  defineCase({
    id: 'resume.declined.indistinguishable',
    title: 'A declined resume looks the same whether the session exists with another token or does not exist',
    profile: 'streaming-resume',
    requirements: ['TAP-RES-012', 'TAP-RES-008'],
    needs: { binding: 'websocket' },
    run: async (ctx) => {
      const old = need(await ctx.session());
      const wrong = await reconnect(ctx, old, [], 'wrong-token-0123456789');
      const ghost = need(await ctx.connect());
      const g = need(
        await handshake(ghost, { resume: { session_id: 'BBBBBBBBBBBBBBBBBBBBBBBB', resume_token: 'wrong-token-0123456789', tasks: [] } }),
      );
      const a = wrong.ack.msg.payload;
      const b = g.ack.msg.payload;
      const shape = (p: Record<string, unknown>) => JSON.stringify(Object.keys(p).sort()) + String(p.resumed);
      require(check(a.resumed === false, 'a resume with a wrong token was granted', 'resumed false', show(a.resumed)));
      require(
        await (async () =>
          old.closed
            ? fail("a declined resume closed the session's existing connection", 'the old connection untouched', 'closed')
            : null)(),
      );
      return verdictOf(
        'indistinguishable',
        check(shape(a) === shape(b), 'the declined acks differ in shape between an existing and a missing session', shape(b), shape(a)),
      );
    },
  }),
];
