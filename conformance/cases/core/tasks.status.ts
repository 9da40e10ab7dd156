/** core profile, Status and snapshots (spec: tasks#status). */
import { type Case, defineCase } from '../../case.ts';
import { check, expectError, jsonEqual, need, require, runTask, show, status, verdictOf } from '../kit.ts';
import { fail, pass } from '../../verdict.ts';
import { ECHO } from './kit.ts';
import { describeMessage } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.tasks.status-unknown',
    title: 'task.status, task.cancel, task.resume and plan.decision for an unknown task get UNKNOWN_TASK',
    profile: 'core',
    requirements: ['TAP-TASK-013'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const id = peer.ids.task('never');
      for (const [type, payload] of [
        ['task.status', {}],
        ['task.cancel', {}],
        ['task.resume', { last_sequence: 0 }],
        ['plan.decision', { plan_id: 'plan-1', decision: 'approved', feedback: 'ok' }],
      ] as const) {
        const sent = await peer.post(type, payload, { task_id: id });
        require(await expectError(peer, sent, { code: 'UNKNOWN_TASK', taskId: id }, `${type} for an unknown task`));
      }
      return pass('UNKNOWN_TASK for each');
    },
  }),
  defineCase({
    id: 'core.tasks.status-snapshot',
    title: 'task.status returns a snapshot with state, capability, last_sequence, timestamps and the result once terminal',
    profile: 'core',
    requirements: ['TAP-TASK-012', 'TAP-TASK-011'],
    needs: ECHO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.echo', 'snap'));
      const r = need(await status(peer, t.taskId));
      if (r.msg.type !== 'task.snapshot')
        return fail(`task.status was answered ${describeMessage(r.msg)}`, 'task.snapshot', describeMessage(r.msg));
      const p = r.msg.payload;
      return verdictOf(
        'a complete snapshot',
        check(p.state === 'completed', 'the snapshot state is not the terminal state', 'completed', show(p.state)),
        check(
          p.last_sequence === t.result.msg.sequence,
          'last_sequence is not the sequence of the last message sent',
          show(t.result.msg.sequence),
          show(p.last_sequence),
        ),
        check(
          p.result !== undefined && jsonEqual(p.result.output, 'snap'),
          'the snapshot of a terminal task lacks its result',
          'result with the output',
          show(p.result),
        ),
        check(p.capability === 'tap.test.echo', 'the snapshot does not name the capability', 'tap.test.echo', show(p.capability)),
      );
    },
  }),
];
