/** Shutdown and hand-off profile: shutdown.request, hand-offs, farewells, scope (spec: shutdown). */
import { defineCase, type Case } from '../case.ts';
import type { CaseContext } from '../context.ts';
import type { Peer, Received } from '../peer.ts';
import type { Wire } from '../session-state.ts';
import { describeMessage, startTask, waitStream } from '../steps.ts';
import {
  between,
  fail,
  judgeOccurrence,
  judgePunctuality,
  pass,
  timingWindow,
  unimplemented,
  type Observed,
  type Outcome,
} from '../verdict.ts';
import { check, checkError, need, runTask, show, verdictOf } from './kit.ts';
import { PLAN } from './plans.ts';

const P = 'shutdown' as const;
const SLEEP = { capabilities: ['tap.test.sleep'] };

/** Sends shutdown.request; returns the response (or the outcome if the agent declined). */
async function requestShutdown(peer: Peer, graceMs: number): Promise<{ sent: Wire; response: Received } | Outcome> {
  const sent = await peer.post('shutdown.request', { reason: 'conformance test', grace_ms: graceMs });
  const response = need(await peer.reply(sent));
  if (response.msg.type !== 'shutdown.response')
    return fail(`shutdown.request was answered ${describeMessage(response.msg)}`, 'shutdown.response', describeMessage(response.msg));
  if (response.msg.payload.approve !== true) {
    return unimplemented(`the agent declined the shutdown (${show(response.msg.payload.reason)}), which it may do`);
  }
  return { sent, response };
}

/**
 * Checks the end of a session with unfinished tasks: each gets its ordinary result, or a hand-off
 * then (cancelling then) cancelled with SHUTTING_DOWN, all before the farewell, and nothing after it.
 */
export function checkSequence(peer: Peer, taskIds: string[], farewell: Received): Outcome | null {
  for (const id of taskIds) {
    const stream = peer.received.filter((r) => !r.resent && r.msg.task_id === id && r.msg.sequence !== undefined);
    const result = stream.find((r) => r.msg.type === 'task.result');
    if (!result) return fail(`task ${id} got no task.result before the session ended`, 'a result for every task', 'none');
    if (result.index > farewell.index)
      return fail(`the result of ${id} came after session.farewell`, 'every result before the farewell', 'after');
    const handoff = stream.find((r) => r.msg.type === 'task.handoff');
    const p = result.msg.payload;
    if (handoff) {
      const h = handoff.msg.payload;
      const shaped =
        h &&
        typeof h.checkpoint === 'object' &&
        Array.isArray(h.completed_steps) &&
        Array.isArray(h.remaining_steps) &&
        typeof h.resume_hint === 'string';
      if (!shaped)
        return fail(
          `the hand-off of ${id} lacks checkpoint, completed_steps, remaining_steps or resume_hint`,
          'a complete task.handoff',
          show(h),
        );
      if (handoff.index > result.index)
        return fail(`the hand-off of ${id} came after its result`, 'task.handoff, then the result', 'result first');
      if (p.status !== 'cancelled' || p.error?.code !== 'SHUTTING_DOWN' || typeof p.error?.retryable !== 'boolean') {
        return fail(
          `after its hand-off, ${id} did not end cancelled with SHUTTING_DOWN`,
          'task.result cancelled, error SHUTTING_DOWN',
          describeMessage(result.msg),
        );
      }
      // Retryable by default; not retryable when a retry could repeat a side effect, and then the
      // error carries the checkpoint (spec: idempotency#retries, TAP-IDEM-012).
      if (p.error.retryable === false && typeof p.error.details?.checkpoint !== 'object') {
        return fail(
          `${id} ended with a non-retryable SHUTTING_DOWN whose error carries no checkpoint`,
          'retryable: true, or retryable: false with error.details.checkpoint (TAP-IDEM-012)',
          show(p.error),
        );
      }
    } else if (p.status === 'cancelled' && p.error?.code === 'SHUTTING_DOWN') {
      return fail(
        `${id} ended by the shutdown without a task.handoff`,
        'task.handoff before the SHUTTING_DOWN result',
        describeMessage(result.msg),
      );
    }
  }
  const after = peer.received.find((r) => r.index > farewell.index && r.conn === farewell.conn && !r.resent);
  if (after)
    return fail(
      `the agent sent ${describeMessage(after.msg)} after its session.farewell`,
      'nothing after the farewell',
      describeMessage(after.msg),
    );
  return null;
}

/**
 * The reply to a message sent after an approved shutdown.request, or null when the agent's
 * farewell came first: an agent may hand off and say farewell at once (TAP-SHUT-007), and after
 * its farewell it answers nothing (TAP-SHUT-011). A missing reply with no farewell fails.
 */
async function replyOrFarewell(peer: Peer, sent: Wire): Promise<Received | null> {
  const r = need(
    await peer.waitFor(
      (m) => m.msg.reply_to === sent.message_id || (m.msg.type === 'session.farewell' && m.conn === peer.conn),
      `a reply to ${sent.type} ${sent.message_id}, or the agent's session.farewell`,
    ),
  );
  return r.msg.type === 'session.farewell' && r.msg.reply_to !== sent.message_id ? null : r;
}

/** After a farewell nothing more of its session may arrive (TAP-SHUT-011); null when nothing did. */
async function nothingAfterFarewell(ctx: CaseContext, peer: Peer): Promise<Outcome | null> {
  const farewell = peer.received.find((r) => r.msg.type === 'session.farewell' && r.conn === peer.conn && !r.resent);
  if (!farewell) return null;
  await peer.waitClosed(ctx.scaled(2000));
  const after = peer.received.find((r) => r.index > farewell.index && r.conn === farewell.conn && !r.resent);
  return after
    ? fail(
        `the agent sent ${describeMessage(after.msg)} after its session.farewell`,
        'nothing after the farewell',
        describeMessage(after.msg),
      )
    : null;
}

/**
 * The detail of a pass where the agent said farewell before it answered some of `total` requests
 * sent after the shutdown.request (`unanswered`, named for people).
 */
function farewellFirst(unanswered: string[], total: number, answered: string): string {
  if (unanswered.length === 0) return answered;
  const names = unanswered.length === 1 ? unanswered[0]! : `${unanswered.slice(0, -1).join(', ')} and ${unanswered[unanswered.length - 1]}`;
  const why = 'as an agent that hands off at once may (TAP-SHUT-007), answering nothing after its farewell (TAP-SHUT-011)';
  return unanswered.length === total
    ? `the agent handed off and said farewell before answering ${names}, ${why}`
    : `${answered}, except ${names}: the agent said farewell first, ${why}`;
}

/**
 * A plan task held for its decision, then an approved shutdown.request followed at once by a
 * plan.decision: the peer, the task and the decision sent, or the outcome when the agent
 * declined the shutdown (which it may do).
 */
async function decisionDuringShutdown(
  ctx: CaseContext,
  decision: 'approved' | 'rejected',
  feedback: string,
): Promise<{ peer: Peer; t: { taskId: string }; d: Wire } | { outcome: Outcome }> {
  const peer = need(await ctx.session());
  const t = need(await startTask(peer, 'tap.test.plan', { plan: PLAN }));
  const submit = need(await waitStream(peer, t.taskId, (m) => m.type === 'plan.submit', 'plan.submit'));
  const stop = await peer.post('shutdown.request', { reason: 'conformance test', grace_ms: 3000 });
  const d = await peer.post('plan.decision', { plan_id: submit.msg.payload.plan?.plan_id, decision, feedback }, { task_id: t.taskId });
  const resp = need(await peer.reply(stop));
  if (resp.msg.type === 'shutdown.response' && resp.msg.payload.approve !== true)
    return { outcome: unimplemented('the agent declined the shutdown, which it may do') };
  return { peer, t, d };
}

/** Waits for the agent's farewell and the close of the transport. */
async function farewellAndClose(ctx: CaseContext, peer: Peer, allowanceMs: number): Promise<{ farewell: Received; closed: boolean }> {
  const farewell = need(await peer.waitFor((r) => r.msg.type === 'session.farewell', 'session.farewell', allowanceMs));
  const closed = await peer.waitClosed(ctx.scaled(5000));
  return { farewell, closed };
}

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

export const shutdownCases: Case[] = [
  defineCase({
    id: 'shutdown.request.sequence',
    title: 'An approved shutdown.request: hand-off of the unfinished task, cancelled SHUTTING_DOWN, farewell, transport closed',
    profile: P,
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
    profile: P,
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
    profile: P,
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
  defineCase({
    id: 'shutdown.decision-refused',
    title: 'A plan decision arriving during shutdown gets SHUTTING_DOWN',
    profile: P,
    spec: 'plans#decisions',
    reason:
      "a plan decision refused is the plans' part of shutdown (Decisions); the rule it checks is the shutdown sequence's (TAP-SHUT-005)",
    requirements: ['TAP-SHUT-005'],
    needs: { capabilities: ['tap.test.plan'] },
    run: async (ctx) => {
      const started = await decisionDuringShutdown(ctx, 'approved', 'go');
      if ('outcome' in started) return started.outcome;
      const { peer, d } = started;
      const dr = await replyOrFarewell(peer, d);
      // Task checks come first: if the shutdown already ended the task, TASK_TERMINAL is right.
      return verdictOf(
        farewellFirst(dr ? [] : ['the plan.decision'], 1, 'refused'),
        dr && checkError(dr.msg, { code: ['SHUTTING_DOWN', 'TASK_TERMINAL'], replyTo: d.message_id }, 'a plan.decision during shutdown'),
        await nothingAfterFarewell(ctx, peer),
      );
    },
  }),
  defineCase({
    id: 'shutdown.rejection-taken',
    title: 'A plan rejection arriving during shutdown is taken: a snapshot, then the task ends failed PLAN_REJECTED',
    profile: P,
    requirements: ['TAP-SHUT-041'],
    needs: { capabilities: ['tap.test.plan'] },
    run: async (ctx) => {
      const started = await decisionDuringShutdown(ctx, 'rejected', 'no');
      if ('outcome' in started) return started.outcome;
      const { peer, t, d } = started;
      const dr = await replyOrFarewell(peer, d);
      // An agent that hands off at once ends the task before the rejection arrives (TAP-SHUT-007).
      if (!dr) return verdictOf(farewellFirst(['the plan.decision'], 1, 'rejection taken'), await nothingAfterFarewell(ctx, peer));
      // The task checks come first: a task the shutdown already handed off is terminal (spec: errors#order-of-checks).
      if (dr.msg.type === 'error') {
        return verdictOf(
          'the shutdown had already ended the task',
          checkError(dr.msg, { code: 'TASK_TERMINAL', replyTo: d.message_id }, 'a plan rejection during shutdown'),
          await nothingAfterFarewell(ctx, peer),
        );
      }
      const result = need(
        await peer.waitFor((r) => r.msg.type === 'task.result' && r.msg.task_id === t.taskId, 'the result of the rejected task'),
      );
      const p = result.msg.payload;
      return verdictOf(
        'rejection taken',
        check(dr.msg.type === 'task.snapshot', 'the rejection was not answered with a snapshot', 'task.snapshot', describeMessage(dr.msg)),
        check(
          p.status === 'failed' && p.error?.code === 'PLAN_REJECTED',
          'the task whose plan was rejected during shutdown did not end failed PLAN_REJECTED',
          'task.result failed PLAN_REJECTED',
          describeMessage(result.msg),
        ),
        await nothingAfterFarewell(ctx, peer),
      );
    },
  }),
  defineCase({
    id: 'shutdown.retry-snapshot',
    title: 'During shutdown a repeat of an existing task is still answered with its snapshot',
    profile: P,
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
    id: 'shutdown.timing.occurrence',
    title: 'After shutdown.request the farewell and close come within the allowance of the grace period',
    profile: P,
    spec: 'shutdown#shutdown-sequence',
    reason: 'the timing of the farewell is a step of the Shutdown sequence; the rule it checks is in Rejection (TAP-SHUT-009)',
    requirements: ['TAP-SHUT-009'],
    needs: SLEEP,
    budgetMs: 15_000,
    run: async (ctx) => {
      const r = await ctx.shared('shutdown-grace', graceScenario);
      if (r.problem) return r.problem;
      const w = timingWindow(1000, ctx.env.timeScale);
      // Closing before the grace period ends is allowed: the nominal time is an upper bound here.
      return judgeOccurrence({ ...w, earliestMs: 0 }, r.at, 'the close after shutdown.request (grace 1000 ms)');
    },
  }),
  defineCase({
    id: 'shutdown.timing.punctual',
    title: 'After shutdown.request the farewell and close come within the grace period',
    profile: P,
    spec: 'shutdown#shutdown-sequence',
    reason: 'the timing of the farewell is a step of the Shutdown sequence; the rule it checks is in Rejection (TAP-SHUT-010)',
    requirements: ['TAP-SHUT-010'],
    needs: SLEEP,
    budgetMs: 15_000,
    run: async (ctx) => {
      const r = await ctx.shared('shutdown-grace', graceScenario);
      if (r.problem) return r.problem;
      return judgePunctuality(timingWindow(1000, ctx.env.timeScale), r.at, 'the close after shutdown.request (grace 1000 ms)');
    },
  }),
  defineCase({
    id: 'shutdown.second-request',
    title: 'A second shutdown.request during shutdown is approved and starts no second sequence',
    profile: P,
    requirements: ['TAP-SHUT-015'],
    needs: SLEEP,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.sleep', { ms: 600_000 }));
      const a = await peer.post('shutdown.request', { reason: 'first', grace_ms: 1000 });
      const b = await peer.post('shutdown.request', { reason: 'second', grace_ms: 1000 });
      const ra = need(await peer.reply(a));
      if (ra.msg.type === 'shutdown.response' && ra.msg.payload.approve !== true)
        return unimplemented('the agent declined the shutdown, which it may do');
      const rb = await replyOrFarewell(peer, b);
      const { farewell } = await farewellAndClose(ctx, peer, ctx.scaled(5000));
      await peer.waitClosed(ctx.scaled(2000));
      const farewells = peer.received.filter((r) => r.msg.type === 'session.farewell' && !r.resent).length;
      const handoffs = peer.received.filter((r) => r.msg.type === 'task.handoff' && !r.resent).length;
      return verdictOf(
        farewellFirst(rb ? [] : ['the second shutdown.request'], 1, 'one sequence'),
        rb &&
          check(
            rb.msg.type === 'shutdown.response' && rb.msg.payload.approve === true,
            'the second shutdown.request was not answered with approve: true',
            'shutdown.response approve true',
            describeMessage(rb.msg),
          ),
        check(
          farewells === 1 && handoffs <= 1,
          'a second shutdown sequence ran',
          'one farewell, at most one hand-off per task',
          `${farewells} farewells, ${handoffs} hand-offs`,
        ),
        checkSequence(peer, [t.taskId], farewell),
      );
    },
  }),
  defineCase({
    id: 'shutdown.requester-farewell',
    title: "After the requester's farewell the agent ends its tasks (hand-offs, results) and says its own farewell",
    profile: P,
    requirements: ['TAP-SHUT-013', 'TAP-SHUT-012'],
    needs: SLEEP,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.sleep', { ms: 600_000 }));
      await peer.post('session.farewell', { reason: 'the requester is done' });
      const farewell = need(
        await peer.waitFor((r) => r.msg.type === 'session.farewell', "the agent's own session.farewell", ctx.scaled(5000)),
      );
      return verdictOf('tasks ended, farewell said', checkSequence(peer, [t.taskId], farewell));
    },
  }),
  defineCase({
    id: 'shutdown.cancel-after',
    title: 'A task ended by the shutdown was not ended by a cancel: a later cancel gets TASK_TERMINAL',
    profile: P,
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
  defineCase({
    id: 'shutdown.scope.one-session',
    title: 'A shutdown.request ends only the session that sent it; the process keeps serving others',
    profile: P,
    requirements: ['TAP-SHUT-003', 'TAP-SHUT-004'],
    needs: { capabilities: ['tap.test.echo'], binding: 'websocket' },
    run: async (ctx) => {
      const a = need(await ctx.session());
      const b = need(await ctx.session());
      const r = await requestShutdown(a, 500);
      if ('verdict' in r) return r;
      need(await a.waitFor((m) => m.msg.type === 'session.farewell', 'session.farewell'));
      await a.waitClosed(ctx.scaled(3000));
      const t = need(await runTask(b, 'tap.test.echo', 'still here'));
      const c = need(await ctx.session());
      return verdictOf(
        'the other session and new sessions go on',
        check(t.result.msg.payload.status === 'completed', 'the other session stopped working', 'completed', describeMessage(t.result.msg)),
        check(!!c, 'no new session could be opened', 'a session', 'none'),
      );
    },
  }),
  defineCase({
    id: 'shutdown.farewell-last',
    title: "Nothing follows a peer's session.farewell",
    profile: P,
    requirements: ['TAP-SHUT-011', 'TAP-SHUT-008'],
    needs: SLEEP,
    // Two sleeps ended by the shutdown.
    tasks: 2,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const ids = [
        need(await startTask(peer, 'tap.test.sleep', { ms: 600_000 })).taskId,
        need(await startTask(peer, 'tap.test.sleep', { ms: 50 })).taskId,
      ];
      const r = await requestShutdown(peer, 300);
      if ('verdict' in r) return r;
      const { farewell } = await farewellAndClose(ctx, peer, ctx.scaled(3000));
      await peer.waitClosed(ctx.scaled(2000));
      return verdictOf('nothing after the farewell', checkSequence(peer, ids, farewell));
    },
  }),
];
