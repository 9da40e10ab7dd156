/** tasks profile, Durability (spec: tasks#durability). */
import type { Peer, Received } from '../../peer.ts';
import type { CaseContext } from '../../context.ts';
import { fail, type Outcome } from '../../verdict.ts';
import { check, need, runTask, show, status, verdictOf } from '../kit.ts';
import { describeMessage, request, startTask, waitStream } from '../../steps.ts';
import { type Case, defineCase } from '../../case.ts';

const NEEDS = { capabilities: ['tap.test.counter', 'tap.test.sleep'], restart: true, integrity: true, binding: 'stdio' as const };

interface Crash {
  counter: { taskId: string; key: string };
  sleeper: string;
  after: Peer;
  counterSnap: Received;
  sleeperSnap: Received;
}

/** Runs a counter and a long sleep, kills the agent, starts it again and asks about both tasks. */
async function crashScenario(ctx: CaseContext): Promise<Crash | Outcome> {
  const before = need(await ctx.session({ signed: true }));
  const key = `restart-${before.ids.task('k')}`;
  const c = need(await runTask(before, 'tap.test.counter', { key }, { idempotencyKey: key }));
  const s = need(await startTask(before, 'tap.test.sleep', { ms: 600_000 }));
  need(await waitStream(before, s.taskId, (m) => m.payload?.state === 'running', 'the running state event'));
  ctx.note('killing the agent (SIGKILL)');
  ctx.connectionOf(before)?.kill?.('SIGKILL');
  await before.waitExit(ctx.scaled(5000));
  const after = need(await ctx.session({ signed: true }));
  after.state.adopted.add(c.taskId);
  after.state.adopted.add(s.taskId);
  const counterSnap = need(await status(after, c.taskId));
  const sleeperSnap = need(await status(after, s.taskId));
  return { counter: { taskId: c.taskId, key }, sleeper: s.taskId, after, counterSnap, sleeperSnap };
}

export const cases: Case[] = [
  defineCase({
    id: 'tasks.restart.knows-tasks',
    title: 'After a restart the agent knows every task it accepted, and its idempotency records still hold',
    profile: 'tasks',
    requirements: ['TAP-TASK-021', 'TAP-TASK-020'],
    needs: NEEDS,
    budgetMs: 60_000,
    run: async (ctx) => {
      const r = await crashScenario(ctx);
      if ('verdict' in r) return r;
      const { after, counterSnap, sleeperSnap } = r;
      const retry = await request(after, 'tap.test.counter', { key: r.counter.key }, { idempotencyKey: r.counter.key });
      const retried = need(retry.reply);
      const probe = need(await runTask(after, 'tap.test.counter', { key: r.counter.key }));
      return verdictOf(
        'both tasks known; the counter ran once',
        check(
          counterSnap.msg.type === 'task.snapshot' && counterSnap.msg.payload.state === 'completed',
          'the completed task is unknown after the restart',
          'task.snapshot completed',
          describeMessage(counterSnap.msg),
        ),
        check(
          sleeperSnap.msg.type === 'task.snapshot',
          'the unfinished task is unknown after the restart',
          'task.snapshot',
          describeMessage(sleeperSnap.msg),
        ),
        check(
          retried.msg.type === 'task.snapshot' && retried.msg.task_id === r.counter.taskId,
          'the idempotency record did not survive the restart',
          `task.snapshot of ${r.counter.taskId}`,
          describeMessage(retried.msg),
        ),
        check(
          probe.result.msg.payload.output?.count === 2,
          'the counter effect was lost or repeated across the restart',
          'count 2',
          show(probe.result.msg.payload.output),
        ),
      );
    },
  }),
  defineCase({
    id: 'tasks.restart.unfinished',
    title: 'A task unfinished at the crash is resumed, or, if a step was cut short, ends failed, not retryable, indeterminate',
    profile: 'tasks',
    requirements: ['TAP-TASK-021', 'TAP-TASK-022'],
    needs: NEEDS,
    budgetMs: 60_000,
    run: async (ctx) => {
      const r = await crashScenario(ctx);
      if ('verdict' in r) return r;
      const snap = r.sleeperSnap.msg;
      if (snap.type !== 'task.snapshot')
        return fail('the unfinished task is unknown after the restart', 'task.snapshot', describeMessage(snap));
      const res = snap.payload.result;
      if (res) {
        return verdictOf(
          'ended indeterminate',
          check(
            res.status === 'failed' && res.error?.retryable === false && res.error?.details?.indeterminate === true,
            'a task cut short by the crash did not end failed, retryable false, indeterminate',
            'failed, retryable false, details.indeterminate true',
            JSON.stringify(res),
          ),
        );
      }
      // The stream belongs to the session that died (resume#attachment): follow the task by status.
      const cancel = await r.after.post('task.cancel', {}, { task_id: r.sleeper });
      const c = need(await r.after.reply(cancel));
      if (c.msg.type !== 'task.snapshot')
        return fail(`a cancel of the resumed task got ${describeMessage(c.msg)}`, 'task.snapshot', describeMessage(c.msg));
      const until = Date.now() + ctx.scaled(10_000);
      let last: Received | undefined;
      while (Date.now() < until) {
        last = need(await status(r.after, r.sleeper));
        if (last.msg.payload?.result) break;
        await ctx.sleep(200);
      }
      return verdictOf(
        `resumed in state ${snap.payload.state}, then cancelled`,
        check(
          last?.msg.payload?.result?.status === 'cancelled',
          'the resumed task did not end cancelled after a cancel',
          'result cancelled',
          describeMessage(last?.msg),
        ),
      );
    },
  }),
];
