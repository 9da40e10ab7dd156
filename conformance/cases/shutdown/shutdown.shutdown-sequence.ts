/** shutdown profile, The shutdown sequence (spec: shutdown#shutdown-sequence). */
import type { CaseContext } from '../../context.ts';
import { between, type Observed, type Outcome, timingWindow, unimplemented } from '../../verdict.ts';
import { describeMessage, startTask, waitStream } from '../../steps.ts';
import { farewellAndClose, farewellFirst, nothingAfterFarewell, replyOrFarewell, requestShutdown, SLEEP } from './kit.ts';
import { type Case, defineCase } from '../../case.ts';
import { timedCases } from '../timing.ts';
import { check, checkError, need, verdictOf } from '../kit.ts';
import { checkSequence } from '../farewell.ts';

async function graceScenario(ctx: CaseContext): Promise<{ at?: Observed; problem?: Outcome }> {
  const s = await ctx.session();
  if (!s.ok) return { problem: s.outcome };
  const peer = s.value;
  const t = await startTask(peer, 'tap.test.sleep', { ms: 600_000 });
  if (!t.ok) return { problem: t.outcome };
  const grace = 1000;
  const t0 = Date.now();
  const r = await requestShutdown(peer, grace);
  if ('verdict' in r) return { problem: r };
  const t1 = Date.now();
  const w = timingWindow(grace, ctx.env.timeScale);
  const closed = await peer.waitClosed(w.latestMs + 200);
  // The sequence started between our request and the arrival of the response.
  const now = Date.now();
  return { at: closed ? between(now - t1, now - t0) : undefined };
}

export const cases: Case[] = [
  defineCase({
    id: 'shutdown.request.sequence',
    title: 'An approved shutdown.request: hand-off of the unfinished task, cancelled SHUTTING_DOWN, farewell, transport closed',
    profile: 'shutdown',
    spec: 'shutdown#shutdown-sequence',
    reason: 'the case follows the whole Shutdown sequence; its first requirement is the one that starts it (TAP-SHUT-002)',
    requirements: ['TAP-SHUT-002', 'TAP-SHUT-007', 'TAP-SHUT-008'],
    needs: SLEEP,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.sleep', { ms: 600_000 }));
      need(await waitStream(peer, t.taskId, (m) => m.payload?.state === 'running', 'the running state event'));
      const r = await requestShutdown(peer, 500);
      if ('verdict' in r) return r;
      const { farewell, closed } = await farewellAndClose(ctx, peer, ctx.scaled(500 * 3 + 2000));
      return verdictOf(
        'handed off, cancelled, farewell, closed',
        checkSequence(peer, [t.taskId], farewell),
        check(
          peer.received.some((m) => m.msg.type === 'task.handoff' && m.msg.task_id === t.taskId),
          'the unfinished task got no task.handoff',
          'task.handoff',
          'none',
        ),
        check(closed, 'the transport stayed open after the farewell', 'closed', 'open'),
      );
    },
  }),
  defineCase({
    id: 'shutdown.request.finish-in-grace',
    title: 'A task that can finish within the grace period may finish with its ordinary result instead of a hand-off',
    profile: 'shutdown',
    spec: 'shutdown#shutdown-sequence',
    reason: 'finishing within the grace period is one path of the Shutdown sequence; the rule it checks is in Rejection (TAP-SHUT-007)',
    requirements: ['TAP-SHUT-007'],
    needs: SLEEP,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.sleep', { ms: 200 }));
      const r = await requestShutdown(peer, 5000);
      if ('verdict' in r) return r;
      const { farewell } = await farewellAndClose(ctx, peer, ctx.scaled(5000 * 3 + 2000));
      const result = peer.received.find((m) => m.msg.type === 'task.result' && m.msg.task_id === t.taskId);
      return verdictOf(`ended ${describeMessage(result?.msg)}`, checkSequence(peer, [t.taskId], farewell));
    },
  }),
  defineCase({
    id: 'shutdown.refuses-new-work',
    title: 'From the start of the sequence a new task.request gets SHUTTING_DOWN (retryable), while status and ping are still answered',
    profile: 'shutdown',
    requirements: ['TAP-SHUT-005', 'TAP-SHUT-006'],
    needs: { capabilities: ['tap.test.sleep', 'tap.test.echo'] },
    // The sleep being shut down, and the request that must be refused.
    tasks: 2,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.sleep', { ms: 600_000 }));
      const stop = await peer.post('shutdown.request', { reason: 'conformance test', grace_ms: 3000 });
      const req = await peer.post('task.request', { capability: 'tap.test.echo', input: 'late' }, { task_id: peer.ids.task() });
      const st = await peer.post('task.status', {}, { task_id: t.taskId });
      const ping = await peer.post('ping', {});
      const resp = need(await peer.reply(stop));
      if (resp.msg.type === 'shutdown.response' && resp.msg.payload.approve !== true)
        return unimplemented('the agent declined the shutdown, which it may do');
      const rr = await replyOrFarewell(peer, req);
      const sr = await replyOrFarewell(peer, st);
      const pr = await replyOrFarewell(peer, ping);
      const unanswered = [
        [rr, 'the task.request'],
        [sr, 'the task.status'],
        [pr, 'the ping'],
      ].flatMap(([r, what]) => (r === null ? [what as string] : []));
      return verdictOf(
        farewellFirst(unanswered, 3, 'new work refused; status and ping answered'),
        rr && checkError(rr.msg, { code: 'SHUTTING_DOWN', replyTo: req.message_id }, 'a task.request during shutdown'),
        sr &&
          check(
            sr.msg.type === 'task.snapshot',
            'task.status during shutdown was not answered with a snapshot',
            'task.snapshot',
            describeMessage(sr.msg),
          ),
        pr && check(pr.msg.type === 'pong', 'ping during shutdown was not answered', 'pong', describeMessage(pr.msg)),
        await nothingAfterFarewell(ctx, peer),
      );
    },
  }),
  ...timedCases({
    profile: 'shutdown',
    needs: SLEEP,
    budgetMs: 15_000,
    key: 'shutdown-grace',
    observe: graceScenario,
    nominalMs: 1000,
    at: (r) => r.at,
    what: 'the close after shutdown.request (grace 1000 ms)',
    occurrence: {
      id: 'shutdown.timing.occurrence',
      title: 'After shutdown.request the farewell and close come within the allowance of the grace period',
      spec: 'shutdown#shutdown-sequence',
      reason: 'the timing of the farewell is a step of the Shutdown sequence; the rule it checks is in Rejection (TAP-SHUT-009)',
      requirements: ['TAP-SHUT-009'],
      // Closing before the grace period ends is allowed: the nominal time is an upper bound here.
      upperBound: true,
    },
    punctuality: {
      id: 'shutdown.timing.punctual',
      title: 'After shutdown.request the farewell and close come within the grace period',
      spec: 'shutdown#shutdown-sequence',
      reason: 'the timing of the farewell is a step of the Shutdown sequence; the rule it checks is in Rejection (TAP-SHUT-010)',
      requirements: ['TAP-SHUT-010'],
    },
  }),
];
