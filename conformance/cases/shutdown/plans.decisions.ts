/** shutdown profile, Decisions (spec: plans#decisions). */
import { type Case, defineCase } from '../../case.ts';
import { decisionDuringShutdown, farewellFirst, nothingAfterFarewell, replyOrFarewell } from './kit.ts';
import { checkError, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'shutdown.decision-refused',
    title: 'A plan decision arriving during shutdown gets SHUTTING_DOWN',
    profile: 'shutdown',
    spec: 'plans#decisions',
    reason:
      "a plan decision refused is the plans' part of shutdown (Decisions); the rule it checks is the shutdown sequence's (TAP-SHUT-005)",
    requirements: ['TAP-SHUT-005'],
    needs: { capabilities: ['tap.test.plan'] },
    run: async (ctx) => {
      const started = await decisionDuringShutdown(ctx, 'approved', 'go');
      if ('outcome' in started) return started.outcome;
      const { peer, d } = started;
      const dr = await replyOrFarewell(peer, d);
      // Task checks come first: if the shutdown already ended the task, TASK_TERMINAL is right.
      return verdictOf(
        farewellFirst(dr ? [] : ['the plan.decision'], 1, 'refused'),
        dr && checkError(dr.msg, { code: ['SHUTTING_DOWN', 'TASK_TERMINAL'], replyTo: d.message_id }, 'a plan.decision during shutdown'),
        await nothingAfterFarewell(ctx, peer),
      );
    },
  }),
];
