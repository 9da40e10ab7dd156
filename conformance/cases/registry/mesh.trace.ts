/** registry profile, One trace across hops (spec: mesh#trace). */
import { type Case, defineCase } from '../../case.ts';
import { REG } from './kit.ts';
import { check, need, show, verdictOf } from '../kit.ts';
import { collectUntilResult, startTask } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'registry.trace.carried',
    title: "Every message of a traced task's stream carries the request's trace_id and span_id unchanged",
    profile: 'registry',
    requirements: ['TAP-MESH-019'],
    needs: { ...REG, capabilities: ['tap.test.stream'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      // W3C-shaped ids, as a mesh requester sets them (TAP-MESH-016, TAP-MESH-017).
      const trace = { trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', span_id: '00f067aa0ba902b7' };
      const t = need(await startTask(peer, 'tap.test.stream', { count: 3 }, { extra: { metadata: trace } as never }));
      const r = need(await collectUntilResult(peer, t.taskId));
      const stream = r.stream;
      const off = stream.filter((m) => {
        const md = (m.msg as { metadata?: { trace_id?: unknown; span_id?: unknown } }).metadata;
        return md?.trace_id !== trace.trace_id || md?.span_id !== trace.span_id;
      });
      return verdictOf(
        `${stream.length} messages of the task, each with the trace`,
        check(
          off.length === 0,
          `${off.length} of the ${stream.length} messages of the task do not carry the request's trace_id and span_id`,
          `metadata ${JSON.stringify(trace)} on every message`,
          off.map((m) => `${m.msg.type}: ${show((m.msg as { metadata?: unknown }).metadata)}`).join('; '),
        ),
      );
    },
  }),
];
