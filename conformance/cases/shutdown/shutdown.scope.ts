/** shutdown profile, Scope (spec: shutdown#scope). */
import { type Case, defineCase } from '../../case.ts';
import { check, completed, need, runTask, verdictOf } from '../kit.ts';
import { requestShutdown } from './kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'shutdown.scope.one-session',
    title: 'A shutdown.request ends only the session that sent it; the process keeps serving others',
    profile: 'shutdown',
    requirements: ['TAP-SHUT-003', 'TAP-SHUT-004'],
    needs: { capabilities: ['tap.test.echo'], binding: 'websocket' },
    run: async (ctx) => {
      const a = need(await ctx.session());
      const b = need(await ctx.session());
      const r = await requestShutdown(a, 500);
      if ('verdict' in r) return r;
      need(await a.waitFor((m) => m.msg.type === 'session.farewell', 'session.farewell'));
      await a.waitClosed(ctx.scaled(3000));
      const t = need(await runTask(b, 'tap.test.echo', 'still here'));
      const c = need(await ctx.session());
      return verdictOf(
        'the other session and new sessions go on',
        completed(t.result, 'the other session stopped working'),
        check(!!c, 'no new session could be opened', 'a session', 'none'),
      );
    },
  }),
];
