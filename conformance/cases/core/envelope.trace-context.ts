/** core profile, Trace context of TAP 1.1 (spec: envelope#trace-context). */
import { type Case, defineCase } from '../../case.ts';
import { request } from '../../steps.ts';
import { ECHO } from './kit.ts';
import { check, checkError, expectError, need, require, runTask, show, verdictOf } from '../kit.ts';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN_ID = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${SPAN_ID}-01`;

export const cases: Case[] = [
  defineCase({
    id: 'core.trace.round-trip',
    title: "Every message of a task's stream carries the request's traceparent, tracestate and baggage unchanged",
    profile: 'core',
    requirements: ['TAP-TRACE-103'],
    needs: ECHO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const context = {
        traceparent: TRACEPARENT,
        tracestate: 'tapconform=t61rcWkgMzE,rojo=00f067aa0ba902b7',
        baggage: 'run=conform,case=trace;p=1',
      };
      const t = need(
        await runTask(peer, 'tap.test.echo', 'traced', { extra: { metadata: { trace_id: TRACE_ID, span_id: SPAN_ID, ...context } } }),
      );
      const messages = [t.accepted, ...t.stream];
      const off = messages.find((r) => Object.entries(context).some(([k, v]) => r.msg.metadata?.[k] !== v));
      return verdictOf(
        `${messages.length} messages of the task, each with trace ${TRACE_ID}`,
        check(
          !off,
          `the agent's ${off?.msg.type} does not carry the request's trace context unchanged`,
          show(context),
          show(off?.msg.metadata),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.trace.malformed-refused',
    title: 'A task.request whose traceparent is malformed (an all-zero trace-id) is refused with INVALID_MESSAGE, and no task is made',
    profile: 'core',
    requirements: ['TAP-TRACE-101'],
    needs: ECHO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const bad = `00-${'0'.repeat(32)}-${SPAN_ID}-01`;
      const sent = await peer.post(
        'task.request',
        { capability: 'tap.test.echo', input: 'bad trace' },
        { task_id: peer.ids.task('bad-trace'), metadata: { traceparent: bad } },
        { deliberate: 'a traceparent whose trace-id is all zero' },
      );
      require(
        checkError(
          need(await peer.reply(sent)).msg,
          { code: 'INVALID_MESSAGE', replyTo: sent.message_id },
          `a task.request with traceparent ${bad}`,
        ),
      );
      const status = await peer.post('task.status', {}, { task_id: sent.task_id! });
      return verdictOf(
        'refused, and no task',
        await expectError(peer, status, { code: 'UNKNOWN_TASK' }, 'task.status of the refused task'),
      );
    },
  }),
  defineCase({
    id: 'core.trace.disagreement-refused',
    title: 'A task.request whose traceparent names another trace than its trace_id is refused with INVALID_MESSAGE',
    profile: 'core',
    requirements: ['TAP-TRACE-102'],
    needs: ECHO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const other = 'a'.repeat(32);
      const { sent, reply } = await request(peer, 'tap.test.echo', 'two traces', {
        extra: { metadata: { trace_id: other, span_id: SPAN_ID, traceparent: TRACEPARENT } },
      });
      require(
        checkError(
          need(reply).msg,
          { code: 'INVALID_MESSAGE', replyTo: sent.message_id },
          `trace_id ${other} with traceparent ${TRACEPARENT}`,
        ),
      );
      const status = await peer.post('task.status', {}, { task_id: sent.task_id! });
      return verdictOf(
        'refused, and no task',
        await expectError(peer, status, { code: 'UNKNOWN_TASK' }, 'task.status of the refused task'),
      );
    },
  }),
];
