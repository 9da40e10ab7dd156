/** stdio profile, Session (spec: bindings-stdio#session). */
import { type Case, defineCase } from '../../case.ts';
import { goneScenario } from '../liveness.ts';
import { fail, pass } from '../../verdict.ts';
import { check, need, verdictOf, wrongReply } from '../kit.ts';
import { describeMessage } from '../../steps.ts';
import { resumeFinished, retainsNothing } from '../streaming-resume/kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'stdio.session-lost',
    title:
      'A stdio agent that loses its peer to missed heartbeats ends the session at once: its tasks end SESSION_LOST, with no resume window',
    profile: 'stdio',
    requirements: ['TAP-STDIO-005', 'TAP-TASK-007'],
    needs: { capabilities: ['tap.test.sleep'], binding: 'stdio' },
    budgetMs: 140_000,
    run: async (ctx) => {
      const r = await ctx.shared('peer-gone', goneScenario);
      if (r.problem) return r.problem;
      // The transport counts as lost, so the results need not reach the requester; but the
      // session must end now: either the task's result says SESSION_LOST or the agent exits.
      if (!r.result) {
        return r.closed
          ? pass('the agent ended the session at once (it exited; the SESSION_LOST results went to no one)')
          : fail(
              'after three unanswered pings the agent neither ended the task nor the session',
              'task.result cancelled SESSION_LOST, or the end of the process',
              'the agent keeps running',
            );
      }
      const p = r.result.msg.payload;
      return verdictOf(
        'SESSION_LOST',
        check(
          p.status === 'cancelled' && p.error?.code === 'SESSION_LOST',
          'the task of the lost session did not end cancelled with SESSION_LOST',
          'task.result cancelled SESSION_LOST',
          describeMessage(r.result.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'stdio.session-retained',
    title:
      "Over stdio a finished task's stream stays retained within the session for the resume_window_ms the agent announced: task.resume from 0 replays it whole",
    profile: 'stdio',
    requirements: ['TAP-STDIO-041', 'TAP-RES-001'],
    needs: { capabilities: ['tap.test.stream'], binding: 'stdio' },
    run: async (ctx) => {
      const { peer, hs } = need(await ctx.sessionWith());
      const window = hs.ack.msg.payload.resume_window_ms;
      const noWindow = retainsNothing(window);
      if (noWindow) return noWindow;
      const { snapshot, last, replayed } = await resumeFinished(peer);
      if (snapshot.msg.type !== 'task.snapshot')
        return wrongReply("task.resume of a finished task's whole stream", 'task.snapshot', snapshot.msg);
      return verdictOf(`replayed 1..${last} after the task's end, resume_window_ms ${window}`, await replayed());
    },
  }),
];
