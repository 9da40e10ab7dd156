/** tasks profile, Deadlines (spec: tasks#deadlines). */
import type { CaseContext } from '../../context.ts';
import { between, fail, judgeOccurrence, type Observed, type Outcome, skipped, timingWindow } from '../../verdict.ts';
import { CONFORMANCE_VAR, MAX_TASK_VAR } from '../../target.ts';
import { describeMessage, request, startTask } from '../../steps.ts';
import { check, checkError, completed, expectNoTask, need, require, runTask, show, verdictOf } from '../kit.ts';
import { type Case, defineCase } from '../../case.ts';
import { timedCases } from '../timing.ts';
import { cap } from './kit.ts';

/** The timeout scenario: a long sleep with timeout_ms; when did the timed_out result come? */
async function timeoutScenario(ctx: CaseContext, timeoutMs: number): Promise<{ at?: Observed; result?: string; problem?: Outcome }> {
  const s = await ctx.session();
  if (!s.ok) return { problem: s.outcome };
  const peer = s.value;
  const sentAt = Date.now();
  const t = await startTask(peer, 'tap.test.sleep', { ms: 600_000 }, { timeoutMs });
  if (!t.ok) return { problem: t.outcome };
  const acceptedAt = Date.now();
  const w = timingWindow(timeoutMs, ctx.env.timeScale);
  const r = await peer.poll((m) => m.msg.type === 'task.result' && m.msg.task_id === t.value.taskId, w.latestMs + 200);
  if (!r) return {};
  const p = r.msg.payload;
  if (p.status !== 'timed_out')
    return {
      problem: fail(`a sleep task past its timeout_ms ended ${describeMessage(r.msg)}`, 'task.result timed_out', describeMessage(r.msg)),
    };
  if (p.error?.code !== 'DEADLINE_EXCEEDED')
    return { problem: fail('a timed_out task does not carry DEADLINE_EXCEEDED', 'error DEADLINE_EXCEEDED', show(p.error)) };
  // The agent received the request between our send and the arrival of task.accepted.
  const now = Date.now();
  return { at: between(now - acceptedAt, now - sentAt), result: describeMessage(r.msg) };
}

/** The max_task_seconds the suite asks a case's agent for, and the longest it waits a task out (spec: conformance#case-limits). */
const SHORT_MAX_TASK_SECONDS = 2;
const LONGEST_MAX_TASK_SECONDS = 10;

/**
 * A sleep with neither deadline nor timeout_ms, on an agent asked for a max_task_seconds of 2:
 * its timed_out result must come once max_task_seconds has passed, never before.
 */
async function maxTaskScenario(ctx: CaseContext): Promise<Outcome> {
  const peer = need(await ctx.session({ env: { [MAX_TASK_VAR]: String(SHORT_MAX_TASK_SECONDS) } }));
  const declared = Number(peer.state.card?.limits?.max_task_seconds);
  if (!(declared <= LONGEST_MAX_TASK_SECONDS))
    return skipped(
      `the agent declares max_task_seconds ${show(peer.state.card?.limits?.max_task_seconds)}, more than the ${LONGEST_MAX_TASK_SECONDS} s this case waits a task out: ` +
        `a stdio agent that takes ${MAX_TASK_VAR}=${SHORT_MAX_TASK_SECONDS} from its environment runs it; start a WebSocket or NATS agent with a max_task_seconds of at most ${LONGEST_MAX_TASK_SECONDS} (an agent of runAgent: with ${MAX_TASK_VAR}=${SHORT_MAX_TASK_SECONDS} beside ${CONFORMANCE_VAR}=1 in its environment)`,
    );
  const sentAt = Date.now();
  const t = need(await startTask(peer, 'tap.test.sleep', { ms: 600_000 }));
  const acceptedAt = Date.now();
  const w = timingWindow(declared * 1000, ctx.env.timeScale);
  const r = await peer.poll((m) => m.msg.type === 'task.result' && m.msg.task_id === t.taskId, w.latestMs + 200);
  const what = `the timed_out result of a task that only max_task_seconds ${declared} bounds`;
  if (!r) return judgeOccurrence(w, undefined, what);
  const now = Date.now();
  const p = r.msg.payload;
  if (p.status !== 'timed_out')
    return fail(
      `a sleep that outlived max_task_seconds ${declared} ended ${describeMessage(r.msg)}`,
      'task.result timed_out',
      describeMessage(r.msg),
    );
  if (p.error?.code !== 'DEADLINE_EXCEEDED')
    return fail('a timed_out task does not carry DEADLINE_EXCEEDED', 'error DEADLINE_EXCEEDED', show(p.error));
  // The agent received the request between our send and the arrival of task.accepted.
  return judgeOccurrence(w, between(now - acceptedAt, now - sentAt), what);
}

export const cases: Case[] = [
  ...timedCases({
    profile: 'tasks',
    needs: cap('sleep'),
    budgetMs: 15_000,
    key: 'task-timeout',
    observe: (ctx) => timeoutScenario(ctx, 600),
    nominalMs: 600,
    at: (r) => r.at,
    what: 'the timed_out result of a task with timeout_ms 600',
    occurrence: {
      id: 'tasks.timeout.occurrence',
      title: 'A task past its timeout_ms ends timed_out with DEADLINE_EXCEEDED, never before the deadline',
      requirements: ['TAP-TASK-015', 'TAP-TASK-010'],
    },
    punctuality: {
      id: 'tasks.timeout.punctual',
      title: 'A task past its timeout_ms ends timed_out punctually',
      requirements: ['TAP-TASK-016'],
    },
  }),
  defineCase({
    id: 'tasks.deadline.max-task-seconds',
    title: 'A task that only max_task_seconds bounds ends timed_out once max_task_seconds has passed, never before',
    profile: 'tasks',
    requirements: ['TAP-TASK-015'],
    needs: cap('sleep'),
    budgetMs: 25_000,
    run: maxTaskScenario,
  }),
  defineCase({
    id: 'tasks.deadline.past',
    title: 'A task.request already past its deadline gets DEADLINE_EXCEEDED and creates no task',
    profile: 'tasks',
    requirements: ['TAP-TASK-014'],
    needs: cap('echo'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const taskId = peer.ids.task();
      const { sent, reply } = await request(peer, 'tap.test.echo', 1, { taskId, deadline: new Date(Date.now() - 600_000).toISOString() });
      require(checkError(need(reply).msg, { code: 'DEADLINE_EXCEEDED', replyTo: sent.message_id, taskId }, 'a deadline ten minutes past'));
      return verdictOf('refused, no task', await expectNoTask(peer, taskId, 'the late request was refused'));
    },
  }),
  defineCase({
    id: 'tasks.deadline.effective',
    title: 'The effective deadline is the earliest of the envelope deadline, receipt + timeout_ms and receipt + max_task_seconds',
    profile: 'tasks',
    spec: 'tasks#deadlines',
    reason: "the effective deadline is defined in Deadlines; the rule it checks is task.accepted's deadline member (TAP-TASK-003)",
    requirements: ['TAP-TASK-003'],
    needs: cap('echo'),
    // Three echo tasks with different deadlines, which may all run at once.
    tasks: 3,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const maxTask = Number(peer.state.card?.limits?.max_task_seconds) * 1000;
      // Each bound is made the earliest of the three: below half the card's max_task_seconds, so
      // that an agent whose limit is shorter than 45 s (any value the card may declare) is judged
      // by the bound the scenario sets, not by its own limit.
      const half = Number.isFinite(maxTask) && maxTask > 0 ? Math.floor(maxTask / 2) : Number.POSITIVE_INFINITY;
      const ahead = Math.min(45_000, half);
      const timeoutMs = Math.min(20_000, half);
      const now = Date.now();
      const envelopeDeadline = new Date(now + ahead).toISOString();
      const a = need(await startTask(peer, 'tap.test.echo', 1, { deadline: envelopeDeadline, timeoutMs: 3_600_000 }));
      const b = need(await startTask(peer, 'tap.test.echo', 2, { deadline: new Date(now + 3_600_000).toISOString(), timeoutMs }));
      const c = need(await startTask(peer, 'tap.test.echo', 3));
      const da = Date.parse(a.accepted.msg.payload.deadline);
      const db = Date.parse(b.accepted.msg.payload.deadline);
      const dc = Date.parse(c.accepted.msg.payload.deadline);
      const near = (x: number, y: number) => Math.abs(x - y) <= 5_000 * ctx.env.timeScale;
      return verdictOf(
        'the earliest bound wins each time',
        check(
          da <= Date.parse(envelopeDeadline) && near(da, Date.parse(envelopeDeadline)),
          `with an envelope deadline ${ahead / 1000} s ahead and timeout_ms of an hour, the effective deadline is not the envelope deadline`,
          envelopeDeadline,
          show(a.accepted.msg.payload.deadline),
        ),
        check(
          near(db, now + timeoutMs),
          `with timeout_ms ${timeoutMs} and a deadline an hour ahead, the effective deadline is not receipt + ${timeoutMs / 1000} s`,
          new Date(now + timeoutMs).toISOString(),
          show(b.accepted.msg.payload.deadline),
        ),
        check(
          !Number.isFinite(maxTask) || near(dc, now + maxTask) || dc <= now + maxTask,
          'without deadline or timeout_ms, the effective deadline is not receipt + max_task_seconds',
          new Date(now + maxTask).toISOString(),
          show(c.accepted.msg.payload.deadline),
        ),
      );
    },
  }),
  defineCase({
    id: 'tasks.request-timeout.no-end',
    title: "A requester's request_timeout_ms never ends a task",
    profile: 'tasks',
    requirements: ['TAP-TASK-017'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session({ params: { request_timeout_ms: 200 } }));
      const t = need(await runTask(peer, 'tap.test.sleep', { ms: 900 }, { resultTimeoutMs: ctx.scaled(10_000) }));
      return verdictOf('completed after request_timeout_ms', completed(t.result, 'a task outliving request_timeout_ms did not complete'));
    },
  }),
];
