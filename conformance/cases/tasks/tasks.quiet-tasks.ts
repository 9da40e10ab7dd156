/** tasks profile, Quiet tasks of TAP 1.1 (spec: tasks#quiet-tasks). */
import { type Case, defineCase } from '../../case.ts';
import { cap, checkQuietStream, quietRequest, quietResult, untilRunning } from './kit.ts';
import { check, completed, expectError, need, PLAN, show, verdictOf, wrongReply } from '../kit.ts';
import { waitStream } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'tasks.quiet.outcome-only',
    title: "A quiet task's stream is its task.result alone, at sequence 2, and its request gets no direct reply",
    profile: 'tasks',
    requirements: ['TAP-QUIET-101', 'TAP-QUIET-103'],
    needs: cap('echo'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await quietRequest(peer, 'tap.test.echo', { said: 'only the outcome' });
      const result = need(await quietResult(peer, sent));
      if (result.msg.type !== 'task.result') return wrongReply('a quiet echo task', 'its task.result', result.msg);
      await peer.barrier();
      return verdictOf(
        'task.result@2 and nothing else',
        completed(result, 'the quiet echo task did not complete'),
        check(
          JSON.stringify(result.msg.payload?.output) === JSON.stringify({ said: 'only the outcome' }),
          'the quiet echo task did not return its input',
          show({ said: 'only the outcome' }),
          show(result.msg.payload?.output),
        ),
        checkQuietStream(peer, sent, ['task.result']),
      );
    },
  }),
  defineCase({
    id: 'tasks.quiet.cancel',
    title: 'A cancelled quiet task answers the cancel with a snapshot, then ends with its cancelled task.result and no state event',
    profile: 'tasks',
    requirements: ['TAP-QUIET-101', 'TAP-CAN-002'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await quietRequest(peer, 'tap.test.sleep', { ms: 30_000 });
      need(await untilRunning(peer, sent.task_id!));
      const cancel = await peer.post('task.cancel', {}, { task_id: sent.task_id });
      const reply = need(await peer.reply(cancel));
      if (reply.msg.type !== 'task.snapshot') return wrongReply('task.cancel of a running quiet task', 'task.snapshot', reply.msg);
      const result = need(await quietResult(peer, sent));
      await peer.barrier();
      return verdictOf(
        'snapshot, then task.result@2 cancelled alone',
        check(
          result.msg.payload?.status === 'cancelled',
          'the cancelled quiet task did not end cancelled',
          'cancelled',
          show(result.msg.payload?.status),
        ),
        checkQuietStream(peer, sent, ['task.result']),
      );
    },
  }),
  defineCase({
    id: 'tasks.quiet.refused',
    title: 'A quiet request that cannot be run is refused with its error as the direct reply, as any request',
    profile: 'tasks',
    requirements: ['TAP-QUIET-101', 'TAP-TASK-002'],
    // The request counts as a task until its refusal comes back.
    tasks: 1,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await quietRequest(peer, 'tap.test.no-such-capability', {});
      return verdictOf(
        'CAPABILITY_NOT_SUPPORTED as the direct reply',
        await expectError(peer, sent, { code: 'CAPABILITY_NOT_SUPPORTED' }, 'a quiet request for a capability the agent lacks'),
      );
    },
  }),
  defineCase({
    id: 'tasks.quiet.plan',
    title: 'A quiet task still sends the plan it needs approved, then only its task.result',
    profile: 'tasks',
    requirements: ['TAP-QUIET-102', 'TAP-QUIET-101'],
    needs: cap('plan'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await quietRequest(peer, 'tap.test.plan', { plan: PLAN });
      const submit = need(
        await waitStream(
          peer,
          sent.task_id!,
          (m) => m.type === 'plan.submit' || m.type === 'task.result',
          'the plan.submit of the quiet plan task',
        ),
      );
      if (submit.msg.type !== 'plan.submit') return wrongReply('a quiet tap.test.plan task', 'plan.submit before its result', submit.msg);
      const decision = await peer.post(
        'plan.decision',
        { plan_id: submit.msg.payload?.plan?.plan_id, decision: 'approved' },
        { task_id: sent.task_id },
      );
      const reply = need(await peer.reply(decision));
      if (reply.msg.type !== 'task.snapshot') return wrongReply('the approval of the quiet task', 'task.snapshot', reply.msg);
      const result = need(await quietResult(peer, sent));
      await peer.barrier();
      return verdictOf(
        'plan.submit@2, task.result@3',
        completed(result, 'the approved quiet plan task did not complete'),
        checkQuietStream(peer, sent, ['plan.submit', 'task.result']),
      );
    },
  }),
];
