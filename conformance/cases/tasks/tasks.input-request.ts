/** tasks profile, Input required: asking (spec: tasks#input-request), TAP 1.1. */
import { type Case, defineCase } from '../../case.ts';
import { describeMessage, waitStream } from '../../steps.ts';
import { check, checkError, jsonEqual, need, require, runTask, show, verdictOf } from '../kit.ts';
import { answer, ASK_PROMPT, ASK_SCHEMA, asked, cap } from './kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'tasks.input.request',
    title: 'A task that asks for input announces input_required, then sends input.request with the prompt and schema as the next message',
    profile: 'tasks',
    requirements: ['TAP-INPUT-101'],
    needs: cap('ask'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { taskId, request } = await asked(peer);
      const seq = request.msg.sequence ?? 0;
      const before = peer.received.find((r) => r.msg.task_id === taskId && r.msg.sequence === seq - 1 && !r.resent);
      const p = request.msg.payload ?? {};
      const done = await answer(peer, taskId, p.request_id, { colour: 'red' });
      need(await waitStream(peer, taskId, (m) => m.type === 'task.result', 'the task.result'));
      return verdictOf(
        'input_required, then input.request',
        check(
          before?.msg.type === 'task.event' && before.msg.payload?.kind === 'state' && before.msg.payload.state === 'input_required',
          'the message of the stream right before input.request is not the state event input_required',
          'task.event state input_required at the sequence before input.request',
          before ? describeMessage(before.msg) : 'nothing',
        ),
        check(
          p.prompt === ASK_PROMPT && jsonEqual(p.schema, ASK_SCHEMA) && typeof p.request_id === 'string',
          'input.request does not carry the request_id, the prompt and the schema of the ask',
          show({ prompt: ASK_PROMPT, schema: ASK_SCHEMA }),
          show(p),
        ),
        check(done.reply.msg.type === 'task.snapshot', 'a matching answer was refused', 'task.snapshot', describeMessage(done.reply.msg)),
      );
    },
  }),
  defineCase({
    id: 'tasks.input.version-1-0',
    title: 'In a session of 1.0 a task that asks for input ends failed CAPABILITY_NOT_SUPPORTED, with nothing of 1.1 sent',
    profile: 'tasks',
    requirements: ['TAP-INPUT-102', 'TAP-MSG-002'],
    needs: cap('ask'),
    run: async (ctx) => {
      const s = need(await ctx.sessionWith({ versions: ['1.0'] }));
      const chosen = s.hs.ack.msg.payload.version;
      require(check(chosen === '1.0', `offered only 1.0, the agent chose ${show(chosen)}`, 'version 1.0', show(chosen)));
      const r = need(await runTask(s.peer, 'tap.test.ask', { schema: ASK_SCHEMA }));
      const p = r.result.msg.payload;
      const leaked = r.stream.find((m) => m.msg.type === 'input.request' || m.msg.payload?.state === 'input_required');
      const stray = await s.peer.post('input.response', { request_id: 'input-1', answer: { colour: 'red' } }, { task_id: r.taskId });
      const reply = need(await s.peer.reply(stray));
      return verdictOf(
        'failed CAPABILITY_NOT_SUPPORTED in 1.0',
        check(
          !leaked,
          `in a session of 1.0 the agent sent ${describeMessage(leaked?.msg)}`,
          'no input_required, no input.request',
          describeMessage(leaked?.msg),
        ),
        check(
          p.status === 'failed' && p.error?.code === 'CAPABILITY_NOT_SUPPORTED' && p.error?.details?.reason === 'input_required',
          'a task of a 1.0 session that needs input did not end failed CAPABILITY_NOT_SUPPORTED with details.reason input_required',
          'task.result failed CAPABILITY_NOT_SUPPORTED, details.reason "input_required"',
          describeMessage(r.result.msg),
        ),
        checkError(reply.msg, { code: 'UNKNOWN_MESSAGE_TYPE', replyTo: stray.message_id }, 'input.response in a session of 1.0'),
      );
    },
  }),
];
