/** shutdown profile, Requester farewell (spec: shutdown#requester-farewell). */
import { type Case, defineCase } from '../../case.ts';
import { SLEEP } from './kit.ts';
import { need, verdictOf } from '../kit.ts';
import { startTask } from '../../steps.ts';
import { checkSequence } from '../farewell.ts';

export const cases: Case[] = [
  defineCase({
    id: 'shutdown.requester-farewell',
    title: "After the requester's farewell the agent ends its tasks (hand-offs, results) and says its own farewell",
    profile: 'shutdown',
    requirements: ['TAP-SHUT-013', 'TAP-SHUT-012'],
    needs: SLEEP,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.sleep', { ms: 600_000 }));
      await peer.post('session.farewell', { reason: 'the requester is done' });
      const farewell = need(
        await peer.waitFor((r) => r.msg.type === 'session.farewell', "the agent's own session.farewell", ctx.scaled(5000)),
      );
      return verdictOf('tasks ended, farewell said', checkSequence(peer, [t.taskId], farewell));
    },
  }),
];
