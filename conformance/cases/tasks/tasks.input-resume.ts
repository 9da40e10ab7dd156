/** tasks profile, Input required: resume, duplicates and integrity (spec: tasks#input-resume), TAP 1.1. */
import { type Case, defineCase } from '../../case.ts';
import { collectUntilResult } from '../../steps.ts';
import { check, jsonEqual, need, show, status, verdictOf } from '../kit.ts';
import { answer, asked, cap } from './kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'tasks.input.snapshot',
    title: 'A snapshot of a task in input_required names its pending request in input_request; once answered, no snapshot does',
    profile: 'tasks',
    requirements: ['TAP-INPUT-110'],
    needs: cap('ask'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { taskId, request } = await asked(peer);
      const p = request.msg.payload ?? {};
      const waiting = need(await status(peer, taskId));
      await answer(peer, taskId, p.request_id, { colour: 'green' });
      need(await collectUntilResult(peer, taskId));
      const ended = need(await status(peer, taskId));
      const want = { request_id: p.request_id, prompt: p.prompt, schema: p.schema };
      return verdictOf(
        'input_request while waiting, none after',
        check(
          waiting.msg.payload?.state === 'input_required' && jsonEqual(waiting.msg.payload?.input_request, want),
          'the snapshot of a waiting task does not name its pending request as input.request asked it',
          show({ state: 'input_required', input_request: want }),
          show({ state: waiting.msg.payload?.state, input_request: waiting.msg.payload?.input_request }),
        ),
        check(
          ended.msg.payload?.input_request === undefined,
          'the snapshot of a task that no longer waits still carries input_request',
          'no input_request',
          show(ended.msg.payload?.input_request),
        ),
      );
    },
  }),
];
