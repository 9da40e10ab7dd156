/** shutdown profile, Shutdown: waiting for input (spec: shutdown#input-shutdown), TAP 1.1. */
import { type Case, defineCase } from '../../case.ts';
import { describeMessage, startTask, waitStream } from '../../steps.ts';
import { unimplemented } from '../../verdict.ts';
import { check, checkError, jsonEqual, need, show, verdictOf } from '../kit.ts';
import { farewellFirst, nothingAfterFarewell, replyOrFarewell } from './kit.ts';

const SCHEMA = { type: 'string' };

export const cases: Case[] = [
  defineCase({
    id: 'shutdown.input-waiting',
    title: 'During shutdown an answer gets SHUTTING_DOWN, and a task waiting for input is handed off with its pending request',
    profile: 'shutdown',
    requirements: ['TAP-SHUT-111', 'TAP-SHUT-112'],
    needs: { capabilities: ['tap.test.ask'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.ask', { schema: SCHEMA, prompt: 'A word, please.' }));
      const request = need(await waitStream(peer, t.taskId, (m) => m.type === 'input.request', 'input.request'));
      const p = request.msg.payload ?? {};
      const stop = await peer.post('shutdown.request', { reason: 'conformance test', grace_ms: 3000 });
      const sent = await peer.post('input.response', { request_id: p.request_id, answer: 'late' }, { task_id: t.taskId });
      const resp = need(await peer.reply(stop));
      if (resp.msg.type === 'shutdown.response' && resp.msg.payload.approve !== true)
        return unimplemented('the agent declined the shutdown, which it may do');
      const reply = await replyOrFarewell(peer, sent);
      const handoff = need(await waitStream(peer, t.taskId, (m) => m.type === 'task.handoff', 'the task.handoff of the waiting task'));
      const result = need(await waitStream(peer, t.taskId, (m) => m.type === 'task.result', 'the result of the waiting task'));
      const want = { request_id: p.request_id, prompt: p.prompt, schema: p.schema };
      // An agent may hand a waiting task off at once; an answer after its result meets a terminal task (spec: shutdown#input-shutdown).
      const refused =
        reply === null
          ? null
          : reply.index > result.index
            ? checkError(reply.msg, { code: ['SHUTTING_DOWN', 'TASK_TERMINAL'], replyTo: sent.message_id }, 'an answer after the hand-off')
            : checkError(reply.msg, { code: 'SHUTTING_DOWN', replyTo: sent.message_id }, 'an answer during the shutdown sequence');
      return verdictOf(
        reply === null ? farewellFirst(['the input.response'], 1, 'refused and handed off') : 'refused and handed off',
        refused,
        check(
          jsonEqual(handoff.msg.payload?.input_request, want),
          'the hand-off of a task waiting for input does not carry its pending request in input_request',
          show(want),
          show(handoff.msg.payload?.input_request),
        ),
        check(
          result.msg.payload?.status === 'cancelled' && result.msg.payload?.error?.code === 'SHUTTING_DOWN',
          'the handed-off task did not end cancelled SHUTTING_DOWN',
          'task.result cancelled SHUTTING_DOWN',
          describeMessage(result.msg),
        ),
        await nothingAfterFarewell(ctx, peer),
      );
    },
  }),
];
