/** tasks profile, Overview (spec: tasks#overview). */
import { type Case, defineCase } from '../../case.ts';
import { cap } from './kit.ts';
import { check, checkWalk, completed, jsonEqual, need, runTask, show, statesOf, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'tasks.lifecycle.echo',
    title: 'An echo task: accepted (sequence 1), running, completed with output = input',
    profile: 'tasks',
    spec: 'tasks#overview',
    reason: "an echo task is the lifecycle the Overview describes; its first requirement is the state table's (TAP-TASK-005)",
    requirements: ['TAP-TASK-005', 'TAP-EVT-001', 'TAP-EVT-003', 'TAP-EVT-004', 'TAP-CONF-009'],
    needs: cap('echo'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const input = { text: 'Café au lait, €3.50\n"to go"', n: [1, 2.5, -3], nested: { ok: true, none: null } };
      const t = need(await runTask(peer, 'tap.test.echo', input));
      const p = t.result.msg.payload;
      return verdictOf(
        'accepted → running → completed',
        checkWalk(statesOf(t.stream), 'echo'),
        completed(t.result, 'the echo task did not complete'),
        check(jsonEqual(p.output, input), 'the echo output differs from the input', show(input), show(p.output)),
        check(p.error === undefined, 'a completed result carries an error', 'no error', show(p.error)),
      );
    },
  }),
];
