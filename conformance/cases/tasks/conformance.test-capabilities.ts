/** tasks profile, Test capabilities (spec: conformance#test-capabilities). */
import { type Case, defineCase } from '../../case.ts';
import { cap } from './kit.ts';
import { check, checkError, expectNoTask, jsonEqual, need, outputsOf, require, runTask, show, verdictOf } from '../kit.ts';
import { collectUntilResult, describeMessage, request } from '../../steps.ts';
import { pass } from '../../verdict.ts';

export const cases: Case[] = [
  defineCase({
    id: 'tasks.stream.output-events',
    title: 'tap.test.stream sends count output events { index, chunk } in order, then output { count }',
    profile: 'tasks',
    requirements: ['TAP-CONF-009', 'TAP-EVT-005'],
    needs: cap('stream'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.stream', { count: 4, interval_ms: 5, chunk: { c: 'x' } }));
      const data = outputsOf(t.stream).map((m) => m.payload.data);
      const want = [0, 1, 2, 3].map((index) => ({ index, chunk: { c: 'x' } }));
      return verdictOf(
        '4 output events, then { count: 4 }',
        check(jsonEqual(data, want), 'the output events differ from { index, chunk } for index 0..3', show(want), show(data)),
        check(
          jsonEqual(t.result.msg.payload.output, { count: 4 }),
          'the result output is not { count: 4 }',
          '{"count":4}',
          show(t.result.msg.payload.output),
        ),
      );
    },
  }),
  defineCase({
    id: 'tasks.stream.no-chunk',
    title: 'tap.test.stream without chunk sends events { index } without a chunk member',
    profile: 'tasks',
    requirements: ['TAP-CONF-009'],
    needs: cap('stream'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.stream', { count: 2 }));
      const data = outputsOf(t.stream).map((m) => m.payload.data);
      return verdictOf(
        '{ index } only',
        check(
          jsonEqual(data, [{ index: 0 }, { index: 1 }]),
          'events without chunk should be { index } only',
          '[{"index":0},{"index":1}]',
          show(data),
        ),
      );
    },
  }),
  defineCase({
    id: 'tasks.fail.error',
    title: 'tap.test.fail ends failed with the given code, message, and the registry retryable by default',
    profile: 'tasks',
    requirements: ['TAP-CONF-009'],
    needs: cap('fail'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const a = need(await runTask(peer, 'tap.test.fail', { code: 'INTERNAL_ERROR', message: 'boom' }));
      const b = need(await runTask(peer, 'tap.test.fail', { code: 'INTERNAL_ERROR', retryable: false }));
      const c = need(await runTask(peer, 'tap.test.fail', { code: 'A_FUTURE_CODE' }));
      const ea = a.result.msg.payload.error;
      return verdictOf(
        'failed as asked',
        check(
          a.result.msg.payload.status === 'failed' && ea?.code === 'INTERNAL_ERROR',
          'the task did not end failed INTERNAL_ERROR',
          'failed INTERNAL_ERROR',
          describeMessage(a.result.msg),
        ),
        check(
          ea?.retryable === true,
          'INTERNAL_ERROR did not default to the registry retryable (true)',
          'retryable true',
          show(ea?.retryable),
        ),
        check(ea?.message === 'boom', 'the given message was not kept', '"boom"', show(ea?.message)),
        check(
          b.result.msg.payload.error?.retryable === false,
          'an explicit retryable: false was not kept',
          'retryable false',
          show(b.result.msg.payload.error?.retryable),
        ),
        check(
          c.result.msg.payload.status === 'failed' && c.result.msg.payload.error?.code === 'A_FUTURE_CODE',
          'an unregistered code was not passed through',
          'failed A_FUTURE_CODE',
          describeMessage(c.result.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'tasks.sleep.completes',
    title: 'tap.test.sleep waits and ends with { slept_ms }',
    profile: 'tasks',
    requirements: ['TAP-CONF-009'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t0 = Date.now();
      const t = need(await runTask(peer, 'tap.test.sleep', { ms: 150 }));
      const took = Date.now() - t0;
      const out = t.result.msg.payload.output;
      return verdictOf(
        `slept ${out?.slept_ms} ms`,
        check(typeof out?.slept_ms === 'number', 'the output has no slept_ms', '{ slept_ms: number }', show(out)),
        check(took >= 140, `the result came after ${took} ms, before the 150 ms sleep could end`, '≥ 150 ms', `${took} ms`),
      );
    },
  }),
  defineCase({
    id: 'tasks.input-schema',
    title: 'A conformance capability refuses input not of its documented form with INVALID_MESSAGE, creating no task',
    profile: 'tasks',
    requirements: ['TAP-CONF-010', 'TAP-TASK-004'],
    needs: cap('sleep', 'stream', 'fail', 'counter'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      for (const [name, input] of [
        ['tap.test.sleep', { ms: 'soon' }],
        ['tap.test.stream', { interval_ms: 5 }],
        ['tap.test.fail', { retryable: true }],
        ['tap.test.counter', { key: 42 }],
      ] as const) {
        const taskId = peer.ids.task();
        const { reply } = await request(peer, name, input, { taskId });
        const m = need(reply).msg;
        if (m.type === 'task.accepted') need(await collectUntilResult(peer, taskId));
        require(checkError(m, { code: 'INVALID_MESSAGE', taskId }, `${name} with input ${show(input)}`));
        require(await expectNoTask(peer, taskId, `the ${name} request was refused`));
      }
      return pass('each refused with INVALID_MESSAGE');
    },
  }),
];
