/** core profile, The error payload (spec: errors#error-payload). */
import { type Case, defineCase } from '../../case.ts';
import { checkError, need, require } from '../kit.ts';
import { pass } from '../../verdict.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.errors.registry-retryable',
    title: "Errors carry the registry's retryable value for their code",
    profile: 'core',
    // A request the agent must refuse; until it does, it may have become a task.
    tasks: 1,
    requirements: ['TAP-ERR-001'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const probes = [
        await peer.post('task.status', {}, { task_id: peer.ids.task('absent') }),
        await peer.post('task.bogus', {}, {}, { deliberate: 'unknown type' }),
        await peer.post('task.request', { capability: 'zz.not.offered', input: null }, { task_id: peer.ids.task() }),
      ];
      for (const s of probes) {
        const r = need(await peer.reply(s));
        require(checkError(r.msg, { code: ['UNKNOWN_TASK', 'UNKNOWN_MESSAGE_TYPE', 'CAPABILITY_NOT_SUPPORTED'] }, `${s.type}`));
      }
      return pass('UNKNOWN_TASK, UNKNOWN_MESSAGE_TYPE and CAPABILITY_NOT_SUPPORTED carry their registry retryable');
    },
  }),
];
