/** nats-durable profile, Event streams (spec: bindings-nats#event-streams). */
import type { Case } from '../../case.ts';
import { durableCase, hasResult, numbered, plantEvents, randomKey, states } from './kit.ts';
import { recordFromDraft, type TaskRecord } from '../../../reference/workspace/record.ts';
import { DEFAULT_NAMES as S, eventSubject, taskSubject } from '../../../reference/jetstream/names.ts';
import { check, show, Stop, verdictOf } from '../kit.ts';
import { notTested, skipped } from '../../verdict.ts';
import { LONGEST_LEASE_MS } from '../../options.ts';
import { seconds } from './durable-survey.ts';
import { connectTarget, type Entry } from './durable-view.ts';

export const cases: Case[] = [
  durableCase({
    id: 'nats-durable.result.stored-result',
    title: 'A delivery whose task stream already ends with a task.result stores that result as the finished record and does not run again',
    requirements: ['TAP-NATS-035'],
    capability: 'tap.test.echo',
    run: async (ctx, view) => {
      if (view.signingKey)
        return skipped(
          "with --signing-key the agent's runners hold a trust file and take a stored task.result only when a runner signed it (TAP-NATS-039), which the harness cannot: nats-durable.signed.stored-result checks that instead",
        );
      const input = { conformance: randomKey() };
      const stored = { conformance: randomKey(), from: 'the stored task.result' };
      const record = recordFromDraft({ next_phase: 'tap.test.echo', input }) as TaskRecord;
      record.requirements.target_agent = view.agentId;
      // An earlier delivery that stored its running event and its task.result, then was lost before its finished record.
      const earlier = [
        { type: 'task.event', payload: { kind: 'state', state: 'running' } },
        { type: 'task.result', payload: { status: 'completed', output: stored } },
      ];
      await plantEvents(view, record.task_id, earlier).catch((err: Error) => {
        throw new Stop(notTested(`the harness cannot store an earlier delivery's messages in ${S.events} (${err.message})`));
      });
      const ack = await view.publishRaw(taskSubject(S, 'tap.test.echo'), JSON.stringify(record), { msgID: `${record.task_id}:submit` });
      const gone = await view.drained(ack.seq, ctx.scaled(10_000));
      const done = await view.finished(record.task_id, ctx.scaled(2000));
      const entries = await view.stream(record.task_id, (e) => e.length > earlier.length, ctx.scaled(1000));
      return verdictOf(
        'stored from the task.result, not run again',
        check(gone, 'the agent did not take the record off its queue', 'acknowledged', 'still queued'),
        check(
          done !== undefined,
          `no finished record in ${S.results} for a task whose stream ends with its task.result`,
          'a finished record',
          'none',
        ),
        done &&
          check(
            done.state.status === 'completed' && JSON.stringify(done.context.history.at(-1)?.output) === JSON.stringify(stored),
            'the finished record is not the one the stored task.result states: the phase ran again',
            `completed with ${show(stored)}`,
            show({ status: done.state.status, output: done.context.history.at(-1)?.output }),
          ),
        done &&
          check(
            done.state.attempts === 0,
            "the finished record's state.attempts is not the stored result's Tap-Attempt",
            '0',
            show(done.state.attempts),
          ),
        check(
          entries.length === earlier.length,
          `the agent published to a task stream in ${S.events} that already ended with its task.result`,
          show(earlier.map((m) => m.type)),
          show(entries.map((e) => e.message.type)),
        ),
      );
    },
  }),
  durableCase({
    id: 'nats-durable.resume.replay',
    title: 'A requester that lost its connection resumes a durable task from last_sequence out of TAP_EVENTS',
    requirements: ['TAP-NATS-022', 'TAP-NATS-023', 'TAP-NATS-031', 'TAP-NATS-032'],
    capability: 'tap.test.stream',
    run: async (ctx, view) => {
      const count = 4;
      const { record } = await view.publish('tap.test.stream', { count, interval_ms: 50 });
      // A requester follows the stream on a connection of its own, and loses it after two messages.
      const lost = await connectTarget(ctx, view.lib);
      const seen = await view.stream(record.task_id, (e) => e.length >= 2, ctx.scaled(10_000), lost);
      await lost.close();
      if (seen.length < 2)
        return verdictOf(
          '',
          check(false, `the task's stream in ${S.events} got fewer than two messages`, `${count + 2} messages`, show(seen.length)),
        );
      const last = seen.at(-1)!.message.sequence as number;
      const again = await connectTarget(ctx, view.lib);
      let rest: Entry[];
      try {
        rest = (await view.stream(record.task_id, hasResult, ctx.scaled(10_000), again)).filter((e) => e.message.sequence > last);
      } finally {
        await again.close();
      }
      const all = [...seen, ...rest];
      const result = all.find((e) => e.message.type === 'task.result');
      const done = await view.finished(record.task_id, ctx.scaled(2000));
      const ids = all.filter((e) => e.msgId !== `${record.task_id}:${e.message.sequence}`);
      const foreign = all.filter(
        (e) => e.message.task_id !== record.task_id || e.message.source !== view.agentId || 'session_id' in e.message,
      );
      return verdictOf(
        `replayed ${rest.length} messages after sequence ${last}`,
        check(result !== undefined, 'the resumed stream has no task.result', 'a task.result last', show(all.map((e) => e.message.type))),
        check(
          all.at(-1)?.message.type === 'task.result',
          'the task.result is not the last message of the stream',
          'task.result last',
          show(all.map((e) => e.message.type)),
        ),
        numbered(all, 'before and after the lost connection'),
        check(
          all.length === count + 2,
          `the stream of ${count} outputs does not hold running, each output and the result`,
          String(count + 2),
          show(all.length),
        ),
        check(
          ids.length === 0,
          'a message of the stream lacks the Nats-Msg-Id <task_id>:<sequence>',
          `${record.task_id}:<sequence>`,
          show(ids.map((e) => e.msgId)),
        ),
        check(
          foreign.length === 0,
          'a message of the stream names another task or source, or carries a session_id',
          `task ${record.task_id} from ${view.agentId}, no session_id`,
          show(foreign.map((e) => e.message)),
        ),
        result &&
          done &&
          check(
            JSON.stringify(result.message.payload?.output) === JSON.stringify(done.context.history.at(-1)?.output),
            'the replayed task.result differs from the finished record',
            show(done.context.history.at(-1)?.output),
            show(result.message.payload),
          ),
      );
    },
  }),
  durableCase({
    id: 'nats-durable.stream.trace',
    title: "Each message of a durable task's stream carries the trace_id and span_id of the task record's metadata",
    requirements: ['TAP-NATS-051'],
    capability: 'tap.test.stream',
    run: async (ctx, view) => {
      const trace = {
        trace_id: randomKey()
          .replace(/[^a-z0-9]/g, '')
          .padEnd(32, '0')
          .slice(0, 32),
        span_id: randomKey(),
      };
      const { record } = await view.publish(
        'tap.test.stream',
        { count: 2, interval_ms: 10 },
        {
          record: (r) => ({ ...r, metadata: { ...r.metadata, ...trace } }),
        },
      );
      const entries = await view.stream(record.task_id, hasResult, ctx.scaled(10_000));
      const untraced = entries.filter(
        (e) => e.message.metadata?.trace_id !== trace.trace_id || e.message.metadata?.span_id !== trace.span_id,
      );
      return verdictOf(
        `${entries.length} messages carry the record's trace`,
        check(
          hasResult(entries),
          `the task's stream in ${S.events} has no task.result`,
          'a task.result',
          show(entries.map((e) => e.message.type)),
        ),
        check(
          untraced.length === 0,
          `${untraced.length} of the ${entries.length} messages of the task's stream do not carry the trace_id and span_id of the record's metadata`,
          show(trace),
          show(untraced[0]?.message.metadata ?? null),
        ),
      );
    },
  }),
  durableCase({
    id: 'nats-durable.stream.no-accepted',
    title: "A durable task's stream holds no task.accepted and no state but running: sequence 1 is the first delivery's running event",
    requirements: ['TAP-NATS-057'],
    capability: 'tap.test.stream',
    run: async (ctx, view) => {
      const { record } = await view.publish('tap.test.stream', { count: 2, interval_ms: 10 });
      const entries = await view.stream(record.task_id, hasResult, ctx.scaled(10_000));
      const accepted = entries.filter((e) => e.message.type === 'task.accepted');
      const otherStates = states(entries).filter((e) => e.message.payload?.state !== 'running');
      const first = entries[0]?.message;
      return verdictOf(
        'running first, no task.accepted',
        check(
          hasResult(entries),
          `the task's stream in ${S.events} has no task.result`,
          'a task.result',
          show(entries.map((e) => e.message.type)),
        ),
        check(
          accepted.length === 0,
          "the task's stream holds a task.accepted: a durable task's record was accepted when the server stored it",
          'no task.accepted',
          `${accepted.length} at sequence ${show(accepted.map((e) => e.message.sequence))}`,
        ),
        check(
          otherStates.length === 0,
          "the task's stream holds a state event other than the running one that begins a delivery",
          'running only',
          show(otherStates.map((e) => e.message.payload?.state)),
        ),
        check(
          first?.type === 'task.event' && first.payload?.kind === 'state' && first.payload?.state === 'running' && first.sequence === 1,
          "the task's stream does not begin with the first delivery's running event at sequence 1",
          'task.event running, sequence 1',
          show(first ? { type: first.type, sequence: first.sequence, payload: first.payload } : null),
        ),
      );
    },
  }),
  durableCase({
    id: 'nats-durable.stream.fence',
    title:
      "A delivery whose publish to the task's stream is a duplicate of another delivery's message stops: it stores nothing more, and a later delivery finishes the task from the other's task.result",
    requirements: ['TAP-NATS-036'],
    capability: 'tap.test.sleep',
    budgetMs: LONGEST_LEASE_MS * 2 + 30_000,
    run: async (ctx, view, q) => {
      if (view.signingKey)
        return skipped(
          "with --signing-key the agent's runners take a stored task.result only when a runner signed it (TAP-NATS-039), which the harness cannot",
        );
      if (q.ackWaitMs > LONGEST_LEASE_MS)
        return notTested(
          `the lease of tap.test.sleep is ${seconds(q.ackWaitMs)} (the ack_wait of consumer ${q.consumer}), longer than the ${seconds(LONGEST_LEASE_MS)} this case waits for a fenced delivery to come again: start the agent with a shorter lease to test the fence`,
        );
      // Another delivery of the same record (a lease that ran out under it) stores sequence 2 first:
      // its task.result, planted while the agent's task sleeps. Planted too late (the agent's own
      // result was stored first: a slow machine), the case tries once more with a longer task.
      let ms = 0;
      let record: TaskRecord | undefined;
      let planted: { conformance: string; from: string } | undefined;
      for (const sleep of [1500, 6000]) {
        ms = Math.round(ctx.scaled(sleep));
        ({ record } = await view.publish('tap.test.sleep', { ms }));
        const running = await view.stream(record.task_id, (e) => e.length >= 1, ctx.scaled(10_000));
        if (running.length === 0)
          return verdictOf('', check(false, "the agent did not begin the task's stream", 'a running event', 'none'));
        planted = { conformance: randomKey(), from: 'the other delivery' };
        const h = view.lib.headers();
        h.set('Tap-Attempt', '1');
        const other = {
          protocol: 'tap/1.0',
          message_id: randomKey(),
          type: 'task.result',
          source: view.agentId,
          target: '*',
          timestamp: new Date().toISOString(),
          task_id: record.task_id,
          sequence: 2,
          payload: { status: 'completed', output: planted },
        };
        const ack = await view.publishRaw(eventSubject(S, record.task_id), JSON.stringify(other), {
          msgID: `${record.task_id}:2`,
          headers: h,
        });
        if (!ack.duplicate) break;
        // Sequence 2 was taken: by the agent's own task.result, stored before the harness planted
        // (tried again), or by another message of its stream, which is judged as it stands.
        const stored = await view.stream(record.task_id, (e) => e.some((x) => x.message.sequence === 2), ctx.scaled(2000));
        if (stored.find((e) => e.message.sequence === 2)?.message.type !== 'task.result') break;
        planted = undefined;
      }
      if (!record || !planted)
        return skipped(
          `the agent's own sequence 2 of tap.test.sleep was stored before the harness could plant another delivery's, twice (tasks of ${seconds(ms)} at the last): the harness read the running event late (a machine under load: run it again on an idle one)`,
        );
      const done = await view.finished(record.task_id, ctx.scaled(ms + 2 * q.ackWaitMs + 10_000));
      const entries = await view.stream(record.task_id, (e) => e.length > 2, ctx.scaled(500));
      return verdictOf(
        "finished from the other delivery's task.result",
        check(done !== undefined, `no finished record in ${S.results}`, 'a finished record', 'none'),
        done &&
          check(
            JSON.stringify(done.context.history.at(-1)?.output) === JSON.stringify(planted),
            "the fenced delivery went on and finished the task with its own output: its publish of sequence 2 was acknowledged as a duplicate of another delivery's message, which it did not check",
            show(planted),
            show(done.context.history.at(-1)?.output),
          ),
        check(
          entries.length === 2,
          "the task's stream got messages after the other delivery's task.result",
          'running, then the task.result',
          show(entries.map((e) => `${e.message.sequence} ${e.message.type}`)),
        ),
      );
    },
  }),
];
