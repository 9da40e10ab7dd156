/** core profile, Table limits (spec: limits#table-limits). */
import { type Case, defineCase } from '../../case.ts';
import { certificatePrincipals } from '../../context.ts';
import { check, expectAlive, need, runTask, show, verdictOf } from '../kit.ts';
import type { Wire } from '../../session-state.ts';
import { describeMessage, request } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.limits.duplicate-table-hostile',
    title: '1 100 small task.status requests about a large result: the newest 1 024 are still answered byte for byte',
    profile: 'core',
    requirements: ['TAP-LIM-018', 'TAP-IDEM-004'],
    budgetMs: 60_000,
    needs: { capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const big = need(await runTask(peer, 'tap.test.echo', 'r'.repeat(8000)));
      const statuses: Wire[] = [];
      for (let batch = 0; batch < 11; batch++) {
        const sent: Wire[] = [];
        for (let i = 0; i < 100; i++) sent.push(await peer.post('task.status', {}, { task_id: big.taskId }));
        for (const s of sent) need(await peer.reply(s));
        statuses.push(...sent);
      }
      const probes = [statuses[statuses.length - 1024]!, statuses[statuses.length - 1]!];
      const outcomes = [];
      for (const probe of probes) {
        const first = need(await peer.reply(probe));
        const mark = peer.mark();
        await peer.send(probe, { deliberate: 'a repeat of an answered task.status' });
        const again = need(await peer.waitFor((r) => r.index >= mark && r.msg.reply_to === probe.message_id, 'the original reply again'));
        outcomes.push(
          check(
            again.text === first.text,
            `the repeat of task.status ${probe.message_id} did not get its original reply byte for byte`,
            'the original task.snapshot',
            describeMessage(again.msg),
          ),
        );
      }
      return verdictOf('the original replies, and the session goes on', ...outcomes, await expectAlive(peer, '1 100 status requests'));
    },
  }),
  defineCase({
    id: 'core.limits.retention-per-principal',
    title:
      "Another principal's flood of 4 200 tiny tasks does not erase an idempotency record, nor the flooder's own first task: the retry runs nothing again",
    profile: 'core',
    requirements: ['TAP-LIM-019', 'TAP-LIM-020', 'TAP-IDEM-015', 'TAP-IDEM-005'],
    // 4 200 tasks, each answered and ended, before the retry; 50 at a time, refusals counted.
    budgetMs: 120_000,
    fillsLimits: true,
    needs: { capabilities: ['tap.test.counter', 'tap.test.echo'], binding: 'websocket', principals: 'two' },
    // The flood fills the flooder's table for the retention window: in a run whose sessions share a
    // principal (a client certificate), no other case may be using it meanwhile.
    exclusive: certificatePrincipals,
    run: async (ctx) => {
      const victim = need(await ctx.session());
      const key = `flood-${victim.ids.task('k')}`;
      const first = need(await runTask(victim, 'tap.test.counter', { key }, { idempotencyKey: key }));
      const flooder = need(await ctx.session({ principal: 'another' }));
      let refused = 0;
      let oldest: string | undefined;
      for (let batch = 0; batch < 84; batch++) {
        const sent: Wire[] = [];
        for (let i = 0; i < 50; i++) {
          sent.push(await flooder.post('task.request', { capability: 'tap.test.echo', input: i }, { task_id: flooder.ids.task('f') }));
        }
        for (const s of sent) {
          const r = need(await flooder.reply(s));
          if (r.msg.type === 'error') refused++;
          else {
            need(await flooder.waitFor((x) => x.msg.type === 'task.result' && x.msg.task_id === s.task_id, 'the flood task result'));
            oldest ??= s.task_id;
          }
        }
      }
      ctx.note(`the flood: 4 200 tasks, ${refused} refused`);
      const retry = await request(victim, 'tap.test.counter', { key }, { idempotencyKey: key });
      const m = need(retry.reply).msg;
      const firstCount = first.result.msg.payload?.output?.count;
      // At its cap the flooder's table refuses new tasks with BUSY; it does not forget its oldest finished task (TAP-LIM-020).
      const status = oldest === undefined ? undefined : await flooder.post('task.status', {}, { task_id: oldest });
      const kept = status && need(await flooder.reply(status)).msg;
      return verdictOf(
        'the snapshot of the first task',
        check(
          m.type === 'task.snapshot' && m.task_id === first.taskId,
          'after the flood the retry under the same idempotency_key was not answered with the first task',
          `task.snapshot of ${first.taskId}`,
          describeMessage(m),
        ),
        check(
          m.type !== 'task.snapshot' || m.payload?.result?.output?.count === firstCount,
          'the recorded task changed',
          `count ${show(firstCount)}`,
          show(m.payload?.result?.output),
        ),
        check(
          !kept || (kept.type === 'task.snapshot' && kept.task_id === oldest),
          "the flooder's first finished task, still within its retention, was forgotten to make room for the flood instead of refusing it with BUSY",
          `task.snapshot of ${oldest}`,
          kept ? describeMessage(kept) : 'nothing',
        ),
      );
    },
  }),
];
