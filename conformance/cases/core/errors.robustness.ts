/** core profile, Robustness (spec: errors#robustness). */
import { type Case, defineCase } from '../../case.ts';
import { expectAlive, need, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.bad-input.robust',
    title: 'A burst of hostile input never crashes the agent or silences it',
    profile: 'core',
    requirements: ['TAP-ERR-008'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const hostile = [
        '{}',
        '{"type":null}',
        '{"protocol":"tap/1.0","message_id":"x","type":"task.request","payload":[]}',
        JSON.stringify({
          ...peer.envelope('task.request', {}),
          payload: { capability: 'a.b', input: { deep: JSON.parse('['.repeat(200) + ']'.repeat(200)) } },
        }).replace(/"task_id":"[^"]*",?/, ''),
        '{"protocol":"tap/1.0","message_id":"' + 'y'.repeat(500) + '"}',
        '\u0000\u0001\u0002',
        '{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}',
        JSON.stringify(peer.envelope('task.cancel', {}, { task_id: '../../etc/passwd' })),
        JSON.stringify(peer.envelope('plan.decision', { plan_id: 'p', decision: 'approved' }, { task_id: 'nope' })),
      ];
      for (const [i, text] of hostile.entries()) await peer.sendText(text, `hostile input ${i + 1}`);
      await ctx.sleep(200);
      return verdictOf('still answering', await expectAlive(peer, 'hostile input'));
    },
  }),
];
