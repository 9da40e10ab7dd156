/** shutdown profile, Repeated and late cancels (spec: cancellation#repeated-cancels). */
import { type Case, defineCase } from '../../case.ts';
import { SLEEP } from './kit.ts';
import { checkError, need, verdictOf } from '../kit.ts';
import { describeMessage, startTask } from '../../steps.ts';
import { pass, unimplemented } from '../../verdict.ts';

export const cases: Case[] = [
  defineCase({
    id: 'shutdown.cancel-after',
    title: 'A task ended by the shutdown was not ended by a cancel: a later cancel gets TASK_TERMINAL',
    profile: 'shutdown',
    requirements: ['TAP-CAN-007'],
    needs: SLEEP,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.sleep', { ms: 600_000 }));
      const stop = await peer.post('shutdown.request', { reason: 'conformance test', grace_ms: 5000 });
      const resp = need(await peer.reply(stop));
      if (resp.msg.type === 'shutdown.response' && resp.msg.payload.approve !== true)
        return unimplemented('the agent declined the shutdown, which it may do');
      const result = need(
        await peer.waitFor((r) => r.msg.type === 'task.result' && r.msg.task_id === t.taskId, 'the task.result of the shutdown'),
      );
      const farewell = peer.received.find((r) => r.msg.type === 'session.farewell');
      if (farewell || peer.closed) return pass(`the session ended before a cancel could be sent (result ${describeMessage(result.msg)})`);
      const c = await peer.post('task.cancel', {}, { task_id: t.taskId });
      const r = await peer.reply(c, ctx.scaled(2000));
      if (!r.ok) return pass('the session ended before the cancel was handled');
      return verdictOf('TASK_TERMINAL', checkError(r.value.msg, { code: 'TASK_TERMINAL' }, 'a cancel of a task the shutdown ended'));
    },
  }),
];
