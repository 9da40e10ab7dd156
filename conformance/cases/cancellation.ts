/** Cancellation profile: task.cancel in every state, repeated and late cancels, races (spec: cancellation). */
import { defineCase, type Case } from '../case.ts';
import type { CaseContext } from '../context.ts';
import type { Peer, Received } from '../peer.ts';
import { collectUntilResult, describeMessage, startTask, waitStream } from '../steps.ts';
import { between, judgeOccurrence, judgePunctuality, pass, timingWindow, type Observed, type Outcome } from '../verdict.ts';
import { check, checkError, expectError, need, outputsOf, require, runTask, show, statesOf, Stop, verdictOf, wrongReply } from './kit.ts';
import { checkWalk } from './tasks.ts';

const P = 'cancellation' as const;
const cap = (...names: string[]) => ({ capabilities: names.map((n) => `tap.test.${n}`) });

/** Starts a long sleep and waits until it is running. */
async function runningSleep(peer: Peer): Promise<string> {
  const t = need(await startTask(peer, 'tap.test.sleep', { ms: 60_000 }));
  need(
    await waitStream(
      peer,
      t.taskId,
      (m) => m.type === 'task.event' && m.payload?.kind === 'state' && m.payload.state === 'running',
      'the running state event',
    ),
  );
  return t.taskId;
}

async function cancel(peer: Peer, taskId: string): Promise<{ sent: ReturnType<Peer['envelope']>; reply: Received }> {
  const sent = await peer.post('task.cancel', { reason: 'conformance test' }, { task_id: taskId });
  return { sent, reply: need(await peer.reply(sent)) };
}

/** Checks a cancelled result: status cancelled, neither output nor error. */
function checkCancelled(m: Received['msg']): Outcome | null {
  const p = m.payload;
  return firstOf(
    check(p.status === 'cancelled', 'the cancelled task did not end cancelled', 'task.result cancelled', describeMessage(m)),
    check(
      p.output === undefined && p.error === undefined,
      'a cancelled result carries output or error',
      '{ status: "cancelled" } only',
      show(p),
    ),
  );
}

function firstOf(...o: (Outcome | null)[]): Outcome | null {
  return o.find((x) => x) ?? null;
}

async function cancelTimingScenario(ctx: CaseContext): Promise<{ at?: Observed; problem?: Outcome }> {
  const s = await ctx.session();
  if (!s.ok) return { problem: s.outcome };
  const peer = s.value;
  let taskId: string;
  try {
    taskId = await runningSleep(peer);
  } catch (e) {
    // The sleep did not start: that is the outcome of both halves, not an error of the harness.
    if (e instanceof Stop) return { problem: e.outcome };
    throw e;
  }
  const t0 = Date.now();
  const sent = await peer.post('task.cancel', {}, { task_id: taskId });
  const snap = await peer.reply(sent);
  const t1 = Date.now();
  const w = timingWindow(0, ctx.env.timeScale);
  const r = await peer.poll((m) => m.msg.type === 'task.result' && m.msg.task_id === taskId, w.latestMs + 200);
  // The agent handled the cancel between our send and the arrival of its snapshot.
  const now = Date.now();
  return { at: r ? between(snap.ok ? now - t1 : 0, now - t0) : undefined };
}

export const cancellationCases: Case[] = [
  defineCase({
    id: 'cancellation.running',
    title: 'Cancelling a running task: snapshot (as before the cancel), state event cancelling, result cancelled',
    profile: P,
    requirements: ['TAP-CAN-002', 'TAP-CAN-003', 'TAP-TASK-011'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const taskId = await runningSleep(peer);
      const before = peer.state.lastSequence(taskId);
      const { reply } = await cancel(peer, taskId);
      if (reply.msg.type !== 'task.snapshot') return wrongReply('task.cancel of a running task', 'task.snapshot', reply.msg);
      const r = need(await collectUntilResult(peer, taskId));
      const states = statesOf(r.stream);
      return verdictOf(
        states.join(' → '),
        check(
          reply.msg.payload.state === 'running',
          'the snapshot answering the cancel does not show the task before the cancel (running)',
          'running',
          show(reply.msg.payload.state),
        ),
        check(
          reply.msg.payload.last_sequence === before,
          'the snapshot last_sequence is not the last sequence sent before the cancel',
          String(before),
          show(reply.msg.payload.last_sequence),
        ),
        check(
          states.includes('cancelling'),
          'no state event cancelling after the cancel of a running task',
          '… → cancelling → cancelled',
          states.join(' → '),
        ),
        checkWalk(states, 'the cancelled task'),
        checkCancelled(r.result.msg),
      );
    },
  }),
  defineCase({
    id: 'cancellation.accepted-or-running',
    title: 'Cancelling a task straight after acceptance ends it cancelled by a legal path',
    profile: P,
    requirements: ['TAP-CAN-001', 'TAP-CAN-002'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.sleep', { ms: 60_000 }));
      const { reply } = await cancel(peer, t.taskId);
      if (reply.msg.type !== 'task.snapshot') return wrongReply('task.cancel of a fresh task', 'task.snapshot', reply.msg);
      const r = need(await collectUntilResult(peer, t.taskId));
      const states = statesOf(r.stream);
      const seenAs = reply.msg.payload.state;
      return verdictOf(
        `snapshot ${seenAs}; ${states.join(' → ')}`,
        check(
          seenAs === 'accepted' || seenAs === 'running',
          'the snapshot shows a state the task could not be in',
          'accepted or running',
          show(seenAs),
        ),
        seenAs === 'running'
          ? check(
              states.includes('cancelling'),
              'a running task was cancelled without passing through cancelling',
              '… → cancelling → cancelled',
              states.join(' → '),
            )
          : null,
        checkWalk(states, 'the cancelled task'),
        checkCancelled(r.result.msg),
      );
    },
  }),
  defineCase({
    id: 'cancellation.stops-work',
    title: 'Once cancelling, the task starts no new step: no output event follows the cancelling event',
    profile: P,
    requirements: ['TAP-CAN-004'],
    needs: cap('stream'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.stream', { count: 200, interval_ms: 30 }));
      need(
        await waitStream(
          peer,
          t.taskId,
          (m) => m.type === 'task.event' && m.payload?.kind === 'output' && m.payload.data?.index >= 2,
          'the third output event',
        ),
      );
      await cancel(peer, t.taskId);
      const r = need(await collectUntilResult(peer, t.taskId));
      const idx = r.stream.findIndex((m) => m.msg.payload?.kind === 'state' && m.msg.payload.state === 'cancelling');
      const late = idx >= 0 ? outputsOf(r.stream.slice(idx)) : [];
      return verdictOf(
        `${outputsOf(r.stream).length} outputs, none after cancelling`,
        check(idx >= 0, 'no cancelling state event', 'a state event cancelling', statesOf(r.stream).join(' → ')),
        check(
          late.length === 0,
          `${late.length} output events came after the task entered cancelling`,
          'no output after cancelling',
          `${late.length} output events`,
        ),
        checkCancelled(r.result.msg),
      );
    },
  }),
  defineCase({
    id: 'cancellation.repeated',
    title: 'A second cancel while the first is in effect gets a snapshot and has no other effect',
    profile: P,
    requirements: ['TAP-CAN-005'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const taskId = await runningSleep(peer);
      const a = await peer.post('task.cancel', {}, { task_id: taskId });
      const b = await peer.post('task.cancel', { reason: 'again' }, { task_id: taskId });
      const ra = need(await peer.reply(a));
      const rb = need(await peer.reply(b));
      const r = need(await collectUntilResult(peer, taskId));
      const cancellingEvents = r.stream.filter((m) => m.msg.payload?.kind === 'state' && m.msg.payload.state === 'cancelling').length;
      return verdictOf(
        'two snapshots, one cancel',
        check(
          ra.msg.type === 'task.snapshot',
          'the first cancel was not answered with a snapshot',
          'task.snapshot',
          describeMessage(ra.msg),
        ),
        check(
          rb.msg.type === 'task.snapshot',
          'a repeated cancel (task cancelling or cancelled by the first) was not answered with a snapshot',
          'task.snapshot',
          describeMessage(rb.msg),
        ),
        check(cancellingEvents <= 1, 'the repeated cancel caused a second cancelling event', 'one cancelling event', `${cancellingEvents}`),
        checkCancelled(r.result.msg),
      );
    },
  }),
  defineCase({
    id: 'cancellation.after-cancelled',
    title: 'A cancel of a task a cancel already ended gets a snapshot showing cancelled',
    profile: P,
    requirements: ['TAP-CAN-006'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const taskId = await runningSleep(peer);
      await cancel(peer, taskId);
      need(await collectUntilResult(peer, taskId));
      const { reply } = await cancel(peer, taskId);
      if (reply.msg.type !== 'task.snapshot') return wrongReply('a cancel of a cancelled task', 'task.snapshot', reply.msg);
      return verdictOf(
        'snapshot (cancelled)',
        check(
          reply.msg.payload.state === 'cancelled' && reply.msg.payload.result?.status === 'cancelled',
          'the snapshot does not show the cancelled task with its result',
          'state cancelled with result',
          show(reply.msg.payload),
        ),
      );
    },
  }),
  defineCase({
    id: 'cancellation.terminal',
    title: 'A cancel of a task that ended otherwise (completed, failed, timed out) gets TASK_TERMINAL',
    profile: P,
    requirements: ['TAP-CAN-007'],
    needs: cap('echo', 'fail', 'sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const done = need(await runTask(peer, 'tap.test.echo', 1));
      const failed = need(await runTask(peer, 'tap.test.fail', { code: 'INTERNAL_ERROR' }));
      const timed = need(await runTask(peer, 'tap.test.sleep', { ms: 60_000 }, { timeoutMs: 100, resultTimeoutMs: ctx.scaled(5000) }));
      for (const [t, how] of [
        [done, 'completed'],
        [failed, 'failed'],
        [timed, 'timed out'],
      ] as const) {
        const sent = await peer.post('task.cancel', {}, { task_id: t.taskId });
        require(await expectError(peer, sent, { code: 'TASK_TERMINAL', taskId: t.taskId }, `a cancel of a ${how} task`));
      }
      return pass('TASK_TERMINAL for each');
    },
  }),
  defineCase({
    id: 'cancellation.race-completion',
    title: 'A cancel racing completion gets one of the outcomes the commit-point order allows',
    profile: P,
    requirements: ['TAP-TASK-018', 'TAP-TASK-019'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const outcomes: string[] = [];
      for (const ms of [5, 20, 40, 60, 80]) {
        const t = need(await startTask(peer, 'tap.test.sleep', { ms }));
        await new Promise((r) => setTimeout(r, ms));
        const sent = await peer.post('task.cancel', {}, { task_id: t.taskId });
        const reply = need(await peer.reply(sent));
        const r = need(await collectUntilResult(peer, t.taskId));
        const resultFirst = r.result.index < reply.index;
        const status = r.result.msg.payload.status;
        if (reply.msg.type === 'error') {
          // The result was queued before the cancel was handled: it must already be on the wire.
          require(checkError(reply.msg, { code: 'TASK_TERMINAL' }, 'a cancel handled after completion'));
          require(
            check(
              resultFirst,
              'TASK_TERMINAL came before the task.result it refers to (a task is terminal only once its result is queued)',
              'task.result, then TASK_TERMINAL',
              'TASK_TERMINAL first',
            ),
          );
          require(check(status === 'completed', 'the cancel was refused as terminal but the task did not complete', 'completed', status));
          outcomes.push('terminal');
        } else if (reply.msg.type === 'task.snapshot') {
          require(
            check(
              !resultFirst,
              'a snapshot answered the cancel although the result had already been sent; the cancel saw a terminal task',
              'TASK_TERMINAL',
              'task.snapshot',
            ),
          );
          require(
            check(
              ['cancelled', 'completed'].includes(status),
              `a cancelled sleep ended ${status}`,
              'cancelled (or completed, reached before the cancel)',
              status,
            ),
          );
          require(checkWalk(statesOf(r.stream), 'the raced task'));
          outcomes.push(status);
        } else return wrongReply('a racing cancel', 'task.snapshot or TASK_TERMINAL', reply.msg);
      }
      return pass(`outcomes: ${outcomes.join(', ')}`);
    },
  }),
  defineCase({
    id: 'cancellation.wins-over-deadline',
    title: 'A task cancelled near its deadline ends either timed_out (deadline first) or cancelled, never cancelling → timed_out',
    profile: P,
    spec: 'cancellation#cancel-and-deadline',
    reason:
      "the race of a cancel with the deadline is set out in Cancel and deadline; the rules it checks are the task states' (TAP-TASK-005) and commit points'",
    requirements: ['TAP-TASK-005', 'TAP-TASK-018'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const seen: string[] = [];
      for (const lead of [0, 20, 40]) {
        const t = need(await startTask(peer, 'tap.test.sleep', { ms: 60_000 }, { timeoutMs: 150 }));
        await new Promise((r) => setTimeout(r, Math.max(0, 150 - lead)));
        const sent = await peer.post('task.cancel', {}, { task_id: t.taskId });
        const reply = need(await peer.reply(sent));
        const r = need(await collectUntilResult(peer, t.taskId));
        const states = statesOf(r.stream);
        require(checkWalk(states, 'a task cancelled at its deadline'));
        if (reply.msg.type === 'error')
          require(checkError(reply.msg, { code: 'TASK_TERMINAL' }, 'a cancel after the deadline ended the task'));
        else if (reply.msg.type === 'task.snapshot' && states.includes('cancelling')) {
          require(
            check(
              r.result.msg.payload.status === 'cancelled',
              'in cancelling the cancel wins over the deadline, yet the task did not end cancelled',
              'cancelled',
              r.result.msg.payload.status,
            ),
          );
        }
        seen.push(states[states.length - 1]!);
      }
      return pass(`ended ${seen.join(', ')}`);
    },
  }),
  defineCase({
    id: 'cancellation.timely',
    title: 'After a cancel of a conformance task the result comes within the allowance',
    profile: P,
    requirements: ['TAP-CAN-008'],
    needs: cap('sleep'),
    budgetMs: 10_000,
    run: async (ctx) => {
      const r = await ctx.shared('cancel-timing', cancelTimingScenario);
      if (r.problem) return r.problem;
      return judgeOccurrence(timingWindow(0, ctx.env.timeScale), r.at, 'the result after a cancel');
    },
  }),
  defineCase({
    id: 'cancellation.prompt',
    title: 'A cancelled task ends as soon as it has released what it held',
    profile: P,
    requirements: ['TAP-CAN-009'],
    needs: cap('sleep'),
    budgetMs: 10_000,
    run: async (ctx) => {
      const r = await ctx.shared('cancel-timing', cancelTimingScenario);
      if (r.problem) return r.problem;
      return judgePunctuality(timingWindow(0, ctx.env.timeScale), r.at, 'the result after a cancel');
    },
  }),
  defineCase({
    id: 'cancellation.keeps-task',
    title: 'A cancelled task is not deleted: its snapshot and stream stay available',
    profile: P,
    spec: 'cancellation#task-cancel',
    reason: 'the case cancels a task and looks at it after, which Task cancel describes; what it checks is retention (TAP-RES-001)',
    requirements: ['TAP-RES-001', 'TAP-CAN-003'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const taskId = await runningSleep(peer);
      await cancel(peer, taskId);
      const r = need(await collectUntilResult(peer, taskId));
      const sent = await peer.post('task.resume', { last_sequence: 0 }, { task_id: taskId });
      const snap = need(await peer.reply(sent));
      if (snap.msg.type !== 'task.snapshot') return wrongReply('task.resume of a cancelled task', 'task.snapshot', snap.msg);
      const last = r.result.msg.sequence!;
      const replay = need(
        await peer.waitFor((m) => m.resent && m.msg.task_id === taskId && m.msg.sequence === last, `the replay of sequence ${last}`),
      );
      return verdictOf(
        'still there',
        check(replay.text === r.result.text, 'the replayed result differs from the original', 'byte-identical', 'different'),
      );
    },
  }),
];
