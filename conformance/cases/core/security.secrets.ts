/** core profile, Secrets (spec: security#secrets). */
import { type Case, defineCase } from '../../case.ts';
import { check, need, runTask, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.security.no-secrets',
    title: 'The agent writes no key or resume token into its messages or logs',
    profile: 'core',
    requirements: ['TAP-SEC-003'],
    needs: { capabilities: ['tap.test.fail'] },
    run: async (ctx) => {
      const { peer, hs } = need(await ctx.sessionWith());
      const token = String(hs.ack.msg.payload.resume_token);
      need(await runTask(peer, 'tap.test.fail', { code: 'INTERNAL_ERROR' }));
      await peer.sendText('{"broken":', 'bad input, to provoke logging');
      await peer.barrier();
      const secrets = [token, ...(ctx.env.key ? [Buffer.from(ctx.env.key.key).toString('base64url')] : [])];
      const leaks = ctx.transcript.entries.filter(
        (e) => (e.dir === 'in' || e.dir === 'stderr') && e.type !== 'handshake.ack' && secrets.some((sec) => e.text.includes(sec)),
      );
      return verdictOf(
        'no secret leaked',
        check(
          leaks.length === 0,
          `a secret appears in the agent's ${leaks[0]?.dir === 'stderr' ? 'standard error' : leaks[0]?.type}`,
          'no key or resume token outside the ack',
          leaks[0]?.text.slice(0, 200),
        ),
      );
    },
  }),
];
