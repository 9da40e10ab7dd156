/** tasks profile, Events (spec: tasks#events). */
import { type Case, defineCase } from '../../case.ts';
import { cap } from './kit.ts';
import { check, checkWalk, completed, need, outputsOf, require, runTask, statesOf, verdictOf } from '../kit.ts';
import { pass } from '../../verdict.ts';

export const cases: Case[] = [
  defineCase({
    id: 'tasks.events.state-per-transition',
    title: 'Every transition but into accepted, awaiting_approval or a terminal state is announced by a state event',
    profile: 'tasks',
    requirements: ['TAP-EVT-001', 'TAP-TASK-005'],
    needs: cap('sleep', 'fail', 'stream'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const runs = [
        need(await runTask(peer, 'tap.test.sleep', { ms: 50 })),
        need(await runTask(peer, 'tap.test.fail', { code: 'INTERNAL_ERROR' })),
        need(await runTask(peer, 'tap.test.stream', { count: 2 })),
      ];
      for (const r of runs) require(checkWalk(statesOf(r.stream), r.sent.payload.capability));
      return pass('each walk was legal and fully announced');
    },
  }),
  defineCase({
    id: 'tasks.stream.streaming-false',
    title: 'With streaming: false negotiated, no output events are sent; the result still comes',
    profile: 'tasks',
    requirements: ['TAP-EVT-002'],
    needs: cap('stream'),
    run: async (ctx) => {
      const peer = need(await ctx.session({ params: { streaming: false } }));
      const t = need(await runTask(peer, 'tap.test.stream', { count: 3 }));
      const outs = outputsOf(t.stream);
      return verdictOf(
        'no output events, result { count: 3 }',
        check(
          outs.length === 0,
          `${outs.length} output events were sent in a session with streaming: false`,
          'no output events',
          `${outs.length} output events`,
        ),
        completed(t.result, 'the task did not complete'),
      );
    },
  }),
  defineCase({
    id: 'tasks.stream.capability-not-streaming',
    title: 'No output events for a capability declaring streaming: false',
    profile: 'tasks',
    requirements: ['TAP-EVT-002'],
    needs: cap('echo', 'sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const declared = new Map<string, boolean>(
        (peer.state.card?.capabilities ?? []).map((c: { name: string; streaming: boolean }) => [c.name, c.streaming]),
      );
      const problems: string[] = [];
      for (const [name, input] of [
        ['tap.test.echo', { v: 1 }],
        ['tap.test.sleep', { ms: 20 }],
      ] as const) {
        const t = need(await runTask(peer, name, input));
        if (declared.get(name) === false && outputsOf(t.stream).length > 0)
          problems.push(`${name} declares streaming: false but sent output events`);
      }
      return verdictOf('none sent', check(problems.length === 0, problems.join('; '), 'no output events', problems.join('; ')));
    },
  }),
];
