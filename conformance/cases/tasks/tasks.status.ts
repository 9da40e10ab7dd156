/** tasks profile, Status and snapshots (spec: tasks#status). */
import { type Case, defineCase } from '../../case.ts';
import { cap } from './kit.ts';
import { check, need, show, status, verdictOf } from '../kit.ts';
import { collectUntilResult, describeMessage, startTask } from '../../steps.ts';
import { fail } from '../../verdict.ts';

export const cases: Case[] = [
  defineCase({
    id: 'tasks.snapshot.running',
    title: 'A snapshot of a running task shows it as it stands, with last_sequence the last sequence sent and no result',
    profile: 'tasks',
    requirements: ['TAP-TASK-011', 'TAP-TASK-012'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.sleep', { ms: 30_000 }));
      need(
        await peer.waitFor(
          (r) => r.msg.task_id === t.taskId && r.msg.type === 'task.event' && r.msg.payload?.state === 'running',
          'the running state event',
        ),
      );
      const r = need(await status(peer, t.taskId));
      const lastSeen = peer.state.lastSequence(t.taskId);
      const cancel = await peer.post('task.cancel', {}, { task_id: t.taskId });
      need(await peer.reply(cancel));
      need(await collectUntilResult(peer, t.taskId));
      if (r.msg.type !== 'task.snapshot')
        return fail(`task.status was answered ${describeMessage(r.msg)}`, 'task.snapshot', describeMessage(r.msg));
      const p = r.msg.payload;
      return verdictOf(
        `running, last_sequence ${p.last_sequence}`,
        check(p.state === 'running', 'the snapshot does not show the running state', 'running', show(p.state)),
        check(p.last_sequence === lastSeen, 'last_sequence is not the last sequence already sent', String(lastSeen), show(p.last_sequence)),
        check(p.result === undefined, 'a non-terminal snapshot carries a result', 'no result', show(p.result)),
        check(
          typeof p.created_at === 'string' && typeof p.updated_at === 'string' && p.created_at <= p.updated_at,
          'created_at / updated_at missing or out of order',
          'created_at ≤ updated_at',
          `${p.created_at} / ${p.updated_at}`,
        ),
      );
    },
  }),
];
