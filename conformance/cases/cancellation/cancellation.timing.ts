/** cancellation profile, Timing (spec: cancellation#timing). */
import type { CaseContext } from '../../context.ts';
import { between, type Observed, type Outcome, timingWindow } from '../../verdict.ts';
import { cap, runningSleep } from './kit.ts';
import { Stop } from '../kit.ts';
import type { Case } from '../../case.ts';
import { timedCases } from '../timing.ts';

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

export const cases: Case[] = [
  ...timedCases({
    profile: 'cancellation',
    needs: cap('sleep'),
    budgetMs: 10_000,
    key: 'cancel-timing',
    observe: cancelTimingScenario,
    nominalMs: 0,
    at: (r) => r.at,
    what: 'the result after a cancel',
    occurrence: {
      id: 'cancellation.timely',
      title: 'After a cancel of a conformance task the result comes within the allowance',
      requirements: ['TAP-CAN-008'],
    },
    punctuality: {
      id: 'cancellation.prompt',
      title: 'A cancelled task ends as soon as it has released what it held',
      requirements: ['TAP-CAN-009'],
    },
  }),
];
