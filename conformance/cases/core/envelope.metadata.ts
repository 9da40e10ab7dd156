/** core profile, Metadata (spec: envelope#metadata). */
import { type Case, defineCase } from '../../case.ts';
import { ECHO } from './kit.ts';
import { completed, need, runTask, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.envelope.metadata-no-effect',
    title: 'metadata (trace ids, attempt, extension members) does not change behaviour',
    profile: 'core',
    spec: 'envelope#metadata',
    reason:
      'metadata is the envelope member under test, described in Metadata; the rule it checks is the one for unknown members (TAP-ENV-015)',
    requirements: ['TAP-ENV-015', 'TAP-VER-003'],
    needs: ECHO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(
        await runTask(peer, 'tap.test.echo', [1], {
          extra: { metadata: { trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', span_id: '00f067aa0ba902b7', attempt: 3, 'x-route': 'blue' } },
        }),
      );
      return verdictOf('the task ran as without metadata', completed(t.result, 'a task with metadata did not complete'));
    },
  }),
];
