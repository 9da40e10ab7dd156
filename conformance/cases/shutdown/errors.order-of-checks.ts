/** shutdown profile, Order of checks (spec: errors#order-of-checks). */
import { type Case, defineCase } from '../../case.ts';
import { check, checkError, need, verdictOf } from '../kit.ts';
import { describeMessage, startTask } from '../../steps.ts';
import { unimplemented } from '../../verdict.ts';
import { decisionDuringShutdown, farewellFirst, nothingAfterFarewell, replyOrFarewell } from './kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'shutdown.retry-snapshot',
    title: 'During shutdown a repeat of an existing task is still answered with its snapshot',
    profile: 'shutdown',
    requirements: ['TAP-ERR-010', 'TAP-SHUT-005'],
    needs: { capabilities: ['tap.test.sleep'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const key = `sd-${peer.ids.task('k')}`;
      const t = need(await startTask(peer, 'tap.test.sleep', { ms: 600_000 }, { idempotencyKey: key }));
      const stop = await peer.post('shutdown.request', { reason: 'conformance test', grace_ms: 3000 });
      const again = await peer.post(
        'task.request',
        { capability: 'tap.test.sleep', input: { ms: 600_000 } },
        { task_id: t.taskId, idempotency_key: key },
      );
      const resp = need(await peer.reply(stop));
      if (resp.msg.type === 'shutdown.response' && resp.msg.payload.approve !== true)
        return unimplemented('the agent declined the shutdown, which it may do');
      const r = await replyOrFarewell(peer, again);
      return verdictOf(
        farewellFirst(r ? [] : ['the repeated task.request'], 1, 'snapshot'),
        r &&
          check(
            r.msg.type === 'task.snapshot',
            'a repeat of an existing task during shutdown was not answered with its snapshot',
            'task.snapshot',
            describeMessage(r.msg),
          ),
        await nothingAfterFarewell(ctx, peer),
      );
    },
  }),
  defineCase({
    id: 'shutdown.order.plan-checks-first',
    title: 'During shutdown an approval naming another plan gets PROTOCOL_VIOLATION: the plan checks come before SHUTTING_DOWN',
    profile: 'shutdown',
    requirements: ['TAP-ERR-010', 'TAP-PLAN-006'],
    needs: { capabilities: ['tap.test.plan'] },
    run: async (ctx) => {
      const started = await decisionDuringShutdown(ctx, 'approved', 'go', 'not-the-current-plan');
      if ('outcome' in started) return started.outcome;
      const { peer, d } = started;
      const dr = await replyOrFarewell(peer, d);
      // Task checks come first of all: if the shutdown already ended the task, TASK_TERMINAL is right.
      return verdictOf(
        farewellFirst(dr ? [] : ['the plan.decision'], 1, 'refused'),
        dr &&
          checkError(
            dr.msg,
            { code: ['PROTOCOL_VIOLATION', 'TASK_TERMINAL'], replyTo: d.message_id },
            'an approval of another plan during shutdown',
          ),
        await nothingAfterFarewell(ctx, peer),
      );
    },
  }),
];
