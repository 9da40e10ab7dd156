/** tasks profile, Input required: waiting (spec: tasks#input-waiting), TAP 1.1. */
import { type Case, defineCase } from '../../case.ts';
import { between, judgeOccurrence, timingWindow } from '../../verdict.ts';
import { collectUntilResult, describeMessage, startTask, waitStream } from '../../steps.ts';
import { check, need, require, show, verdictOf, wrongReply } from '../kit.ts';
import { ASK_PROMPT, ASK_SCHEMA, asked, cap } from './kit.ts';

/** The timeout_ms of the waiting task whose deadline passes. */
const TIMEOUT_MS = 600;

export const cases: Case[] = [
  defineCase({
    id: 'tasks.input.cancel',
    title: 'A task.cancel of a task waiting for input gets the snapshot, then cancelling and a cancelled result',
    profile: 'tasks',
    requirements: ['TAP-INPUT-109'],
    needs: cap('ask'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { taskId, request } = await asked(peer);
      const sent = await peer.post('task.cancel', { reason: 'conformance test' }, { task_id: taskId });
      const reply = need(await peer.reply(sent));
      if (reply.msg.type !== 'task.snapshot') return wrongReply('task.cancel of a task in input_required', 'task.snapshot', reply.msg);
      const r = need(await collectUntilResult(peer, taskId));
      const after = r.stream.filter((m) => m.index > request.index);
      const walk = after.map((m) => (m.msg.type === 'task.result' ? String(m.msg.payload?.status) : String(m.msg.payload?.state)));
      return verdictOf(
        'cancelling, then cancelled',
        check(
          walk.length === 2 && walk[0] === 'cancelling' && walk[1] === 'cancelled',
          'a cancel of a waiting task did not go through cancelling to cancelled',
          'state cancelling, then task.result cancelled',
          after.map((m) => describeMessage(m.msg)).join(', '),
        ),
      );
    },
  }),
  defineCase({
    id: 'tasks.input.deadline',
    title: 'A task waiting for input ends timed_out DEADLINE_EXCEEDED when its deadline passes, never before',
    profile: 'tasks',
    requirements: ['TAP-INPUT-108'],
    needs: cap('ask'),
    budgetMs: 15_000,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sentAt = Date.now();
      const t = need(await startTask(peer, 'tap.test.ask', { schema: ASK_SCHEMA, prompt: ASK_PROMPT }, { timeoutMs: TIMEOUT_MS }));
      // The agent received the request between our send and the arrival of task.accepted.
      const acceptedAt = Date.now();
      const taskId = t.taskId;
      need(await waitStream(peer, taskId, (m) => m.type === 'input.request', 'input.request'));
      const w = timingWindow(TIMEOUT_MS, ctx.env.timeScale);
      const result = await peer.poll((m) => m.msg.type === 'task.result' && m.msg.task_id === taskId, w.latestMs + 200);
      const now = Date.now();
      const timing = judgeOccurrence(
        w,
        result ? between(now - acceptedAt, now - sentAt) : undefined,
        'the timed_out result of a task waiting for input',
      );
      require(timing.verdict === 'PASS' ? null : timing);
      const p = result!.msg.payload;
      return verdictOf(
        'timed_out on time',
        check(
          p.status === 'timed_out' && p.error?.code === 'DEADLINE_EXCEEDED',
          'a waiting task past its deadline did not end timed_out DEADLINE_EXCEEDED',
          'task.result timed_out DEADLINE_EXCEEDED',
          show(p),
        ),
      );
    },
  }),
];
