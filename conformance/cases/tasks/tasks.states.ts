/** tasks profile, States (spec: tasks#states). */
import { type Case, defineCase } from '../../case.ts';
import { cap } from './kit.ts';
import { expectNothing, need, runTask, status, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'tasks.after-terminal.quiet',
    title: 'Once terminal, a task gets no further stream messages, even after status and resume requests',
    profile: 'tasks',
    requirements: ['TAP-TASK-006'],
    needs: cap('echo'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.echo', 'done'));
      const mark = peer.mark();
      need(await status(peer, t.taskId));
      return verdictOf(
        'quiet after the result',
        await expectNothing(
          peer,
          mark,
          (r) => !r.resent && r.msg.task_id === t.taskId && r.msg.sequence !== undefined,
          'a terminal task must add nothing to its stream',
        ),
      );
    },
  }),
  /** tasks.property.lifecycle: random task operations on one session, checked as a whole. */
  defineCase({
    id: 'tasks.property.lifecycle',
    title: 'Random submits, duplicates, keyed retries, cancels, status and resume requests keep every task rule (property-based)',
    profile: 'tasks',
    requirements: ['TAP-TASK-005', 'TAP-TASK-007', 'TAP-EVT-004', 'TAP-IDEM-001', 'TAP-IDEM-005', 'TAP-CAN-007', 'TAP-RES-002'],
    needs: { capabilities: ['tap.test.counter', 'tap.test.sleep'] },
    // At most three sleeps running (the model's check) and a scheduled pair of counters.
    tasks: 5,
    budgetMs: 70_000,
    run: async (ctx) => (await import('../../property-runs.ts')).runLifecycleProperty(ctx),
  }),
];
