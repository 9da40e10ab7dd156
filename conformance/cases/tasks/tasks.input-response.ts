/** tasks profile, Input required: answering (spec: tasks#input-response), TAP 1.1. */
import { type Case, defineCase } from '../../case.ts';
import { collectUntilResult, describeMessage, startTask } from '../../steps.ts';
import { check, checkError, expectNothing, jsonEqual, need, require, show, status, verdictOf, wrongReply } from '../kit.ts';
import { answer, asked, cap } from './kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'tasks.input.answer',
    title: 'A matching answer gets the snapshot before it took effect, then running, and the task completes with the answer',
    profile: 'tasks',
    requirements: ['TAP-INPUT-106'],
    needs: cap('ask'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { taskId, request } = await asked(peer);
      const { reply } = await answer(peer, taskId, request.msg.payload?.request_id, { colour: 'green' });
      if (reply.msg.type !== 'task.snapshot') return wrongReply('input.response with a matching answer', 'task.snapshot', reply.msg);
      const r = need(await collectUntilResult(peer, taskId));
      const after = r.stream.filter((m) => m.index > request.index).map((m) => describeMessage(m.msg));
      const running = r.stream.find((m) => m.index > request.index);
      return verdictOf(
        'answered, running, completed with the answer',
        check(
          reply.msg.payload?.state === 'input_required',
          'the reply to the answer does not show the task before the answer',
          'a snapshot in input_required',
          show(reply.msg.payload?.state),
        ),
        check(
          running?.msg.type === 'task.event' && running.msg.payload?.state === 'running',
          'the answer did not move the task to running with a state event first',
          'task.event state running, then the rest',
          after.join(', '),
        ),
        check(
          r.result.msg.payload.status === 'completed' && jsonEqual(r.result.msg.payload.output, { answer: { colour: 'green' } }),
          'the task did not complete with the answer it was given',
          show({ status: 'completed', output: { answer: { colour: 'green' } } }),
          describeMessage(r.result.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'tasks.input.invalid-answer',
    title: 'An answer that fails the schema gets INVALID_ANSWER with details.issues, and the task keeps waiting for the same request',
    profile: 'tasks',
    requirements: ['TAP-INPUT-105', 'TAP-INPUT-107'],
    needs: cap('ask'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { taskId, request } = await asked(peer);
      const requestId = request.msg.payload?.request_id;
      const mark = peer.mark();
      const wrong = await answer(peer, taskId, requestId, { colour: 'blue' });
      require(
        checkError(wrong.reply.msg, { code: 'INVALID_ANSWER', replyTo: wrong.sent.message_id, taskId }, 'an answer outside the schema'),
      );
      const issues = wrong.reply.msg.payload?.details?.issues;
      const quiet = await expectNothing(
        peer,
        mark,
        (r) => r.msg.task_id === taskId && r.msg.sequence !== undefined,
        'a refused answer leaves the task waiting',
      );
      const snap = need(await status(peer, taskId));
      const right = await answer(peer, taskId, requestId, { colour: 'red' });
      need(await collectUntilResult(peer, taskId));
      return verdictOf(
        'refused with INVALID_ANSWER; still waiting',
        check(Array.isArray(issues) && issues.length > 0, 'INVALID_ANSWER carries no details.issues', 'details.issues', show(issues)),
        quiet,
        check(
          snap.msg.payload?.state === 'input_required' && snap.msg.payload?.input_request?.request_id === requestId,
          'after a refused answer the task no longer waits for the same request',
          `input_required, input_request ${String(requestId)}`,
          show({ state: snap.msg.payload?.state, input_request: snap.msg.payload?.input_request?.request_id }),
        ),
        check(
          right.reply.msg.type === 'task.snapshot',
          'a corrected answer was refused',
          'task.snapshot',
          describeMessage(right.reply.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'tasks.input.not-waiting',
    title: 'An answer for a task that waits for no input, or naming another request, gets PROTOCOL_VIOLATION and has no effect',
    profile: 'tasks',
    requirements: ['TAP-INPUT-104'],
    needs: cap('ask', 'sleep'),
    tasks: 2,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sleeping = need(await startTask(peer, 'tap.test.sleep', { ms: 600_000 }));
      const idle = await answer(peer, sleeping.taskId, 'input-1', { colour: 'red' });
      await peer.post('task.cancel', {}, { task_id: sleeping.taskId });
      const { taskId, request } = await asked(peer);
      const other = await answer(peer, taskId, 'not-the-request', { colour: 'red' });
      const snap = need(await status(peer, taskId));
      await answer(peer, taskId, request.msg.payload?.request_id, { colour: 'red' });
      need(await collectUntilResult(peer, taskId));
      need(await collectUntilResult(peer, sleeping.taskId));
      return verdictOf(
        'refused',
        checkError(
          idle.reply.msg,
          { code: 'PROTOCOL_VIOLATION', taskId: sleeping.taskId },
          'an answer for a running task that asked nothing',
        ),
        checkError(other.reply.msg, { code: 'PROTOCOL_VIOLATION', taskId }, 'an answer naming a request_id that is not pending'),
        check(
          snap.msg.payload?.state === 'input_required',
          'an answer for another request moved the task on',
          'input_required',
          show(snap.msg.payload?.state),
        ),
      );
    },
  }),
  defineCase({
    id: 'tasks.input.unknown-or-terminal',
    title: 'An answer for an unknown task gets UNKNOWN_TASK, and one for a terminal task TASK_TERMINAL before any check of the request',
    profile: 'tasks',
    requirements: ['TAP-INPUT-103'],
    needs: cap('ask'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const unknown = await answer(peer, peer.ids.task('absent'), 'input-1', { colour: 'red' });
      const { taskId, request } = await asked(peer);
      const requestId = request.msg.payload?.request_id;
      await answer(peer, taskId, requestId, { colour: 'red' });
      need(await collectUntilResult(peer, taskId));
      const again = await answer(peer, taskId, requestId, { colour: 'red' });
      const wrongId = await answer(peer, taskId, 'not-the-request', { colour: 'blue' });
      return verdictOf(
        'UNKNOWN_TASK, then TASK_TERMINAL',
        checkError(unknown.reply.msg, { code: 'UNKNOWN_TASK' }, 'an answer for a task that does not exist'),
        checkError(again.reply.msg, { code: 'TASK_TERMINAL', taskId }, 'a second answer after the task completed'),
        checkError(wrongId.reply.msg, { code: 'TASK_TERMINAL', taskId }, 'an answer with a wrong request_id for a terminal task'),
      );
    },
  }),
];
