/** stdio profile, States (spec: tasks#states). */
import { type Case, defineCase } from '../../case.ts';
import { goneScenario } from '../liveness.ts';
import { pass } from '../../verdict.ts';
import { check, verdictOf } from '../kit.ts';
import { describeMessage } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'stdio.session-lost.cancelling',
    title: 'A running task ended SESSION_LOST on stdio passes through cancelling, as every cancelled ending does',
    profile: 'stdio',
    requirements: ['TAP-TASK-041'],
    needs: { capabilities: ['tap.test.sleep'], binding: 'stdio' },
    budgetMs: 140_000,
    run: async (ctx) => {
      const r = await ctx.shared('peer-gone', goneScenario);
      if (r.problem) return r.problem;
      if (!r.result) return pass('the agent exited at once; no result reached the requester to judge');
      const stream = r.stream ?? [];
      const states = stream.filter((m) => m.msg.type === 'task.event' && m.msg.payload?.kind === 'state').map((m) => m.msg.payload.state);
      if (!states.includes('running')) return pass('the task was still accepted, which ends cancelled directly');
      return verdictOf(
        'running → cancelling → cancelled',
        check(
          states[states.length - 1] === 'cancelling',
          'a running task ended cancelled SESSION_LOST without passing through cancelling',
          'a state event cancelling before the result',
          `state events ${states.join(', ')}, then ${describeMessage(r.result.msg)}`,
        ),
      );
    },
  }),
];
