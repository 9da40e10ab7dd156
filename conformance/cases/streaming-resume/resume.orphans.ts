/** streaming-resume profile, Orphaned sessions (spec: resume#orphans). */
import type { CaseContext } from '../../context.ts';
import { fail, judgeOccurrence, type Observed, type Outcome, skipped, timingWindow } from '../../verdict.ts';
import type { Received } from '../../peer.ts';
import { describeMessage, startTask } from '../../steps.ts';
import { type Case, defineCase } from '../../case.ts';
import { check, cutShort, verdictOf } from '../kit.ts';

/** The longest resume window the orphan scenario waits through. */
const LONGEST_WINDOW = 20_000;

/** The orphan scenario: a dropped WebSocket connection whose session is never resumed. */
async function orphanScenario(ctx: CaseContext): Promise<{ window: number; at?: Observed; snapshot?: Received; problem?: Outcome }> {
  const s = await ctx.sessionWith({ signed: true });
  if (!s.ok) return { window: 0, problem: s.outcome };
  const { peer, hs } = s.value;
  const window = Number(hs.ack.msg.payload.resume_window_ms);
  if (!(window <= LONGEST_WINDOW))
    return {
      window,
      problem: skipped(
        `resume_window_ms is ${window}; an orphaned session that lives that long is not waited for. An agent whose resume window is ${LONGEST_WINDOW} ms or less gets this case (an agent of runAgent: runAgent({ card, capabilities, resumeWindowMs: ${LONGEST_WINDOW} }))`,
      ),
    };
  const t = await startTask(peer, 'tap.test.sleep', { ms: 600_000 });
  if (!t.ok) return { window, problem: t.outcome };
  (ctx.connectionOf(peer)?.transport as { terminate?: () => void } | undefined)?.terminate?.();
  const dropped = Date.now();
  await peer.waitClosed(ctx.scaled(3000));
  const w = timingWindow(window, ctx.env.timeScale);
  // A new session of the same principal (the same key) watches the orphaned task.
  const watcher = await ctx.session({ signed: true });
  if (!watcher.ok) return { window, problem: watcher.outcome };
  const deadline = dropped + w.latestMs;
  while (Date.now() < deadline) {
    const sent = await watcher.value.post('task.status', {}, { task_id: t.value.taskId });
    const r = await watcher.value.reply(sent);
    if (!r.ok) return { window, problem: r.outcome };
    if (r.value.msg.type === 'task.snapshot' && r.value.msg.payload.result?.status === 'timed_out')
      return { window, problem: cutShort(peer, "its orphaned session's resume window ran out") };
    if (r.value.msg.type === 'task.snapshot' && r.value.msg.payload.result) return { window, at: Date.now() - dropped, snapshot: r.value };
    if (r.value.msg.type !== 'task.snapshot')
      return {
        window,
        problem: fail(
          `another session of the same principal asked about the orphaned task and got ${describeMessage(r.value.msg)}`,
          'task.snapshot',
          describeMessage(r.value.msg),
        ),
      };
    await ctx.sleep(500);
  }
  return { window };
}

export const cases: Case[] = [
  defineCase({
    id: 'resume.orphan.session-lost',
    title: 'When the resume window of an orphaned session passes, its tasks end cancelled with SESSION_LOST',
    profile: 'streaming-resume',
    requirements: ['TAP-RES-014', 'TAP-RES-013'],
    needs: { capabilities: ['tap.test.sleep'], binding: 'websocket', integrity: true },
    budgetMs: 70_000,
    run: async (ctx) => {
      const r = await ctx.shared('orphan', orphanScenario);
      if (r.problem) return r.problem;
      const o = judgeOccurrence(timingWindow(r.window, ctx.env.timeScale), r.at, 'the end of the orphaned task');
      if (o.verdict !== 'PASS') return o;
      const res = r.snapshot!.msg.payload.result;
      return verdictOf(
        o.detail,
        check(
          res?.status === 'cancelled' && res?.error?.code === 'SESSION_LOST',
          'the orphaned task did not end cancelled with SESSION_LOST',
          'cancelled SESSION_LOST',
          JSON.stringify(res),
        ),
      );
    },
  }),
];
