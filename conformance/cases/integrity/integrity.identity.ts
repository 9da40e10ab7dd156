/** integrity profile, Identity (spec: integrity#identity). */
import { type Case, defineCase } from '../../case.ts';
import { check, expectAlive, expectError, expectNoTask, need, require, verdictOf } from '../kit.ts';
import { pass } from '../../verdict.ts';
import { collectUntilResult, describeMessage, startTask } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'integrity.identity.forged-source',
    title: 'A message whose source is not the bound requester gets IDENTITY_MISMATCH and has no effect',
    profile: 'integrity',
    requirements: ['TAP-INT-001'],
    needs: { capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const taskId = peer.ids.task();
      const sent = await peer.post('task.request', { capability: 'tap.test.echo', input: 1 }, { task_id: taskId, source: 'mallory' });
      require(await expectError(peer, sent, { code: 'IDENTITY_MISMATCH' }, 'a task.request from source "mallory"'));
      require(await expectNoTask(peer, taskId, 'the forged request was refused'));
      const t = await peer.post('task.status', {}, { task_id: taskId, target: 'someone-else' });
      require(await expectError(peer, t, { code: 'IDENTITY_MISMATCH' }, 'a task.status to target "someone-else"'));
      return pass('refused');
    },
  }),
  defineCase({
    id: 'integrity.identity.forged-farewell',
    title: 'A forged session.farewell or shutdown.request never ends the session',
    profile: 'integrity',
    requirements: ['TAP-INT-002'],
    needs: { capabilities: ['tap.test.sleep'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.sleep', { ms: 30_000 }));
      const bye = await peer.post('session.farewell', { reason: 'forged' }, { source: 'mallory' });
      require(await expectError(peer, bye, { code: 'IDENTITY_MISMATCH' }, 'a session.farewell from "mallory"'));
      const stop = await peer.post('shutdown.request', { reason: 'forged', grace_ms: 0 }, { source: 'mallory' });
      require(await expectError(peer, stop, { code: 'IDENTITY_MISMATCH' }, 'a shutdown.request from "mallory"'));
      require(await expectAlive(peer, 'forged farewell and shutdown'));
      const snap = await peer.post('task.status', {}, { task_id: t.taskId });
      const s = need(await peer.reply(snap));
      const c = await peer.post('task.cancel', {}, { task_id: t.taskId });
      need(await peer.reply(c));
      need(await collectUntilResult(peer, t.taskId));
      const farewell = peer.received.find((r) => r.msg.type === 'session.farewell' || r.msg.type === 'task.handoff');
      return verdictOf(
        'the session went on',
        check(s.msg.payload?.state === 'running', 'the task was affected by the forged messages', 'running', describeMessage(s.msg)),
        check(!farewell, 'the agent began a shutdown on a forged message', 'no hand-off, no farewell', describeMessage(farewell?.msg)),
      );
    },
  }),
];
