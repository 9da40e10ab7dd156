/** streaming-resume profile, Resume and the version (spec: resume#resume-version). */
import { type Case, defineCase } from '../../case.ts';
import { check, need, show, verdictOf } from '../kit.ts';
import { handshake } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'resume.version.declined-in-another-version',
    title: 'A resume of a session of 1.1 in a handshake that negotiates 1.0 is declined: resumed false, a new session',
    profile: 'streaming-resume',
    requirements: ['TAP-RES-101', 'TAP-RES-012'],
    needs: { binding: 'websocket' },
    run: async (ctx) => {
      const old = need(await ctx.session());
      const { sessionId, resumeToken } = old.state;
      const peer = need(await ctx.connect());
      const hs = need(
        await handshake(peer, { versions: ['1.0'], resume: { session_id: sessionId!, resume_token: resumeToken!, tasks: [] } }),
      );
      const p = hs.ack.msg.payload;
      return verdictOf(
        `declined: version ${p.version}, a new session`,
        check(p.version === '1.0', `offered only 1.0, the agent chose ${show(p.version)}`, 'version 1.0', show(p.version)),
        check(
          p.resumed === false && p.session_id !== sessionId,
          `the agent resumed session ${sessionId}, opened in 1.1, in a handshake of 1.0`,
          'resumed false and a new session_id',
          `resumed ${show(p.resumed)}, session ${show(p.session_id)}`,
        ),
      );
    },
  }),
];
