/** nats-durable profile, The durable task queue (spec: bindings-nats#task-queue). */
import { seconds } from './durable-survey.ts';
import { outlivingMs, judgeRenewal, judgeWaiting, MOST_PLACES } from './durable-leases.ts';
import type { Case } from '../../case.ts';
import { consumerOf, deadLetters, durableCase, hasResult, plantEvents, randomKey, STREAMS, states, waiting, watchOrder } from './kit.ts';
import { recordFromDraft } from '../../../reference/workspace/record.ts';
import { DEFAULT_NAMES as S, deadSubject, taskSubject } from '../../../reference/jetstream/names.ts';
import type { TaskRecord } from '../../../reference/workspace/record.ts';
import { check, show, Stop, verdictOf } from '../kit.ts';
import { validateAgainst } from '../../../reference/core/validate.ts';
import { LONGEST_LEASE_MS } from '../../options.ts';
import { notTested, skipped } from '../../verdict.ts';

/** True when a subject holds a wildcard token: a record's value made it a lookup of many subjects. */
const widened = (subject: string): boolean => subject.split('.').some((t) => t === '*' || t === '>');

/** The codes of a dead letter that was never a task record of its queue. */
const REFUSED = ['MALFORMED_MESSAGE', 'INVALID_MESSAGE', 'MESSAGE_TOO_LARGE'];

export const cases: Case[] = [
  durableCase({
    id: 'nats-durable.queue.streams',
    title: 'The durable streams and the bucket TAP_IDEMPOTENCY have the subjects, retention, windows and history of the binding',
    requirements: ['TAP-NATS-052'],
    capability: 'tap.test.echo',
    run: async (_ctx, view) => {
      const problems: string[] = [];
      for (const want of STREAMS) {
        const info = await view.jsm.streams.info(want.name).catch(() => null);
        if (!info) {
          problems.push(`there is no stream ${want.name}`);
          continue;
        }
        const c = info.config;
        if (JSON.stringify(c.subjects ?? []) !== JSON.stringify(want.subjects))
          problems.push(`${want.name} has the subjects ${show(c.subjects ?? [])}, not ${show(want.subjects)}`);
        if (c.retention !== want.retention) problems.push(`${want.name} has ${c.retention} retention, not ${want.retention}`);
        const window = Math.round((c.duplicate_window ?? 0) / 1_000_000);
        if (window < want.dedupMs)
          problems.push(`${want.name} de-duplicates for ${window} ms, less than the ${want.dedupMs} ms a redelivery's publishes need`);
      }
      const bucket = `KV_${S.idempotency}`;
      const kv = await view.jsm.streams.info(bucket).catch(() => null);
      if (!kv) problems.push(`there is no bucket ${S.idempotency} (stream ${bucket})`);
      else {
        if (kv.config.max_age !== 0)
          problems.push(
            `${S.idempotency} removes keys after ${Math.round(kv.config.max_age / 1_000_000)} ms (max_age): a repeat of an idempotency key would run again once its key aged out`,
          );
        if (kv.config.max_msgs_per_subject !== 1)
          problems.push(`${S.idempotency} keeps a history of ${kv.config.max_msgs_per_subject}, not 1`);
      }
      return verdictOf(
        'every stream and the bucket as the binding sets them',
        check(problems.length === 0, problems.join('; '), 'the settings of bindings-nats#task-queue', `${problems.length} differences`),
      );
    },
  }),
  durableCase({
    id: 'nats-durable.queue.consumer',
    title:
      "The capability's queue is consumed through the durable pull consumer tap-<capability>, explicitly acknowledged, filtered to its subject",
    requirements: ['TAP-NATS-053'],
    capability: 'tap.test.echo',
    run: async (_ctx, view, q) => {
      const want = consumerOf(q.capability);
      const info = await view.jsm.consumers.info(S.tasks, q.consumer);
      const c = info.config;
      const filters = [c.filter_subject, ...(c.filter_subjects ?? [])].filter(Boolean);
      return verdictOf(
        `consumer ${want}`,
        check(
          q.consumer === want,
          `the agent serves ${q.capability} through the consumer ${q.consumer}: a runner of another implementation would make ${want} and the work queue would refuse it, or both would take the subject`,
          want,
          q.consumer,
        ),
        check(c.durable_name === q.consumer, `the consumer ${q.consumer} is not durable`, 'durable', show(c.durable_name ?? 'ephemeral')),
        check(
          !c.deliver_subject,
          `the consumer ${q.consumer} pushes to ${c.deliver_subject}; the binding's runners pull`,
          'a pull consumer',
          'push',
        ),
        check(
          c.ack_policy === 'explicit',
          `the consumer ${q.consumer} does not take explicit acknowledgements`,
          'explicit',
          show(c.ack_policy),
        ),
        check(
          filters.length === 1 && filters[0] === taskSubject(S, q.capability),
          `the consumer ${q.consumer} filters ${show(filters)}, not the capability's subject alone`,
          taskSubject(S, q.capability),
          show(filters),
        ),
      );
    },
  }),
  durableCase({
    id: 'nats-durable.queue.work-queue',
    title: 'The stream TAP_TASKS has work-queue retention',
    requirements: ['TAP-NATS-016'],
    capability: 'tap.test.echo',
    run: async (_ctx, view) => {
      const info = await view.jsm.streams.info(S.tasks);
      return verdictOf(
        'work-queue retention',
        check(
          info.config.retention === 'workqueue',
          `${S.tasks} does not have work-queue retention`,
          'workqueue',
          show(info.config.retention),
        ),
      );
    },
  }),
  durableCase({
    id: 'nats-durable.result.before-ack',
    title: 'A finished phase leaves the queue only after its finished record is stored, attempts 0, and its task.result before that',
    requirements: ['TAP-NATS-019', 'TAP-NATS-020', 'TAP-NATS-032'],
    capability: 'tap.test.echo',
    run: async (ctx, view) => {
      const input = { conformance: randomKey() };
      // The runner's acknowledgements and publishes reach the harness in the order the runner sent them.
      const order = await watchOrder(view);
      const { record, seq } = await view.publish('tap.test.echo', input);
      const gone = await view.drained(seq, ctx.scaled(10_000));
      await ctx.sleep(100);
      order.stop();
      const acked = order.seen.indexOf(`ack ${seq}`);
      const stored = order.seen.indexOf(`result ${record.task_id}`);
      if (!gone) return verdictOf('', check(false, 'the agent did not take the record off its queue', 'acknowledged', 'still queued'));
      // Acknowledged: the finished record must be stored already, and the stream's task.result before it.
      const done = await view.finished(record.task_id, 0);
      const entries = done ? await view.stream(record.task_id, (e) => hasResult(e), ctx.scaled(2000)) : [];
      const result = entries.find((e) => e.message.type === 'task.result');
      return verdictOf(
        'stored, then acknowledged',
        check(
          done !== undefined,
          'the delivery was acknowledged before its finished record was in TAP_RESULTS',
          'a finished record',
          'none',
        ),
        // An acknowledgement the harness may not watch ($JS.ACK) leaves only the check above.
        acked < 0
          ? null
          : check(
              stored >= 0 && stored < acked,
              `the runner acknowledged the delivery before it published the finished record to ${S.results}: a runner lost between the two loses the task`,
              'the finished record, then the acknowledgement',
              show(order.seen.filter((e) => e === `ack ${seq}` || e === `result ${record.task_id}`)),
            ),
        done &&
          check(
            validateAgainst('task-record.schema.json', done) === null,
            'the finished record does not match task-record.schema.json',
            'valid',
            show(done),
          ),
        done && check(done.state.status === 'completed', 'the echo did not finish completed', 'completed', show(done.state.status)),
        done &&
          check(done.state.attempts === 0, 'a first delivery finished with state.attempts other than 0', '0', show(done.state.attempts)),
        check(
          result !== undefined,
          `the finished record was stored but the task's stream in ${S.events} has no task.result`,
          'a task.result',
          show(entries.map((e) => e.message.type)),
        ),
        result &&
          check(
            result.message.payload?.status === 'completed' && JSON.stringify(result.message.payload?.output) === JSON.stringify(input),
            'the task.result in the stream differs from the finished record',
            `completed with ${show(input)}`,
            show(result.message.payload),
          ),
      );
    },
  }),
  durableCase({
    id: 'nats-durable.lease.renewal',
    title: 'A task that runs longer than ack_wait is delivered once: the agent renews its lease',
    requirements: ['TAP-NATS-018'],
    capability: 'tap.test.sleep',
    // The longest wait: 2.5 leases of the longest lease this case waits out, then one more lease.
    budgetMs: LONGEST_LEASE_MS * 3.5 + 20_000,
    run: judgeRenewal,
  }),
  durableCase({
    id: 'nats-durable.lease.waiting',
    title:
      'A task that waits for a place longer than ack_wait is delivered once: the agent renews the deliveries it holds, not only those it runs',
    requirements: ['TAP-NATS-072'],
    capability: 'tap.test.sleep',
    // Up to two set-ups: the places filled, then a task that waits one hold and runs one.
    budgetMs: outlivingMs(LONGEST_LEASE_MS) * 6 + MOST_PLACES * 3000 + 20_000,
    run: judgeWaiting,
  }),
  durableCase({
    id: 'nats-durable.record.invalid',
    title:
      "A queue message that is not a task record of the queue (a wildcard task_id, null, an array, another capability's record) is a dead letter at once, never run and never finished with another task's result",
    requirements: ['TAP-NATS-037'],
    capability: 'tap.test.echo',
    run: async (ctx, view) => {
      // A task whose finished record and stream are stored: a lookup widened by a wildcard finds them.
      const victim = await view.publish('tap.test.echo', { conformance: randomKey(), victim: 'its output' });
      if (!(await view.finished(victim.record.task_id, ctx.scaled(10_000))))
        return verdictOf('', check(false, 'the agent did not finish an echo task', 'a finished record', 'none'));
      // No other case of the profile makes dead letters on tap.test.echo's queue: every new one is this case's.
      const mark = await view.deadMark();
      const resultsMark = (await view.jsm.streams.info(S.results)).state.last_seq;
      const marker = randomKey();
      const copy = (taskId: string): string =>
        JSON.stringify({
          ...victim.record,
          task_id: taskId,
          context: { ...victim.record.context, current_input: { marker, task_id: taskId } },
        });
      const bad: Array<[string, string | null]> = [
        ['a record whose task_id is ">"', copy('>')],
        ['a record whose task_id is "*"', copy('*')],
        ['a record whose task_id is "a.*"', copy('a.*')],
        ['null', 'null'],
        ['an array', '[]'],
        ['a string', '"x"'],
        ["a record of tap.test.counter on tap.test.echo's queue", null],
      ];
      const seqs: number[] = [];
      for (const [i, [, bytes]] of bad.entries()) {
        if (bytes === null) {
          const other = await view.publish('tap.test.echo', { marker }, { record: (r) => ({ ...r, next_phase: 'tap.test.counter' }) });
          seqs.push(other.seq);
        } else {
          const ack = await view.publishRaw(taskSubject(S, 'tap.test.echo'), bytes, { msgID: `${marker}:${i}` });
          seqs.push(ack.seq);
        }
      }
      const dead = await deadLetters(view, ctx, 'tap.test.echo', mark, bad.length, ctx.scaled(10_000));
      const codes = dead.map((d) => d.state?.last_error?.code);
      // A runner acknowledges a message after publishing its dead letter: the queue has 5 s to empty.
      const queued: number[] = [];
      const until = Date.now() + ctx.scaled(5_000);
      for (const seq of seqs) if (!(await view.drained(seq, Math.max(0, until - Date.now())))) queued.push(seq);
      // No finished record under a widened subject, and none of these inputs finished at all.
      const forged: string[] = [];
      const info = await view.jsm.streams.info(S.results);
      for (let seq = resultsMark + 1; seq <= info.state.last_seq; seq++) {
        const m = await view.jsm.streams.getMessage(S.results, { seq }).catch(() => null);
        if (!m) continue;
        let input: unknown;
        try {
          input = m.json<TaskRecord>().context?.current_input;
        } catch {
          input = undefined;
        }
        if (widened(m.subject) || (input as { marker?: unknown } | null)?.marker === marker) forged.push(m.subject);
      }
      return verdictOf(
        `${bad.length} dead letters`,
        check(
          forged.length === 0,
          'a message that is not a task record of the queue was finished: its task_id widened a lookup, or it ran',
          'no finished record for any of them',
          show(forged),
        ),
        check(
          dead.length >= bad.length,
          `only ${dead.length} of the ${bad.length} messages became dead letters within ${Math.round(ctx.scaled(10_000) / 1000)} s: ${bad.map(([what]) => what).join(', ')}`,
          `${bad.length} dead letters on ${deadSubject(S, 'tap.test.echo')}`,
          show(codes),
        ),
        check(
          codes.every((c) => REFUSED.includes(String(c))),
          'a dead letter does not give why the message is not a task record of the queue: it was run, or delivered until it ran out of deliveries',
          REFUSED.join(' or '),
          show(codes),
        ),
        check(queued.length === 0, `${queued.length} still on ${S.tasks} after their dead letters`, 'none left', show(queued)),
      );
    },
  }),
  durableCase({
    id: 'nats-durable.result.attempts',
    title:
      'A finished record keeps the attempts of the delivery that finished its phase: a stored task.result of attempt 2 is finished with state.attempts 2',
    requirements: ['TAP-NATS-054', 'TAP-NATS-035'],
    capability: 'tap.test.echo',
    run: async (ctx, view) => {
      if (view.signingKey)
        return skipped(
          "with --signing-key the agent's runners take a stored task.result only when a runner signed it (TAP-NATS-039), which the harness cannot",
        );
      const output = { conformance: randomKey() };
      const record = recordFromDraft({ next_phase: 'tap.test.echo', input: { conformance: randomKey() } }) as TaskRecord;
      record.requirements.target_agent = view.agentId;
      // The third delivery of the record (attempt 2) finished the phase and was lost before its finished record.
      await plantEvents(
        view,
        record.task_id,
        [
          { type: 'task.event', payload: { kind: 'state', state: 'running' } },
          { type: 'task.result', payload: { status: 'completed', output } },
        ],
        2,
      ).catch((err: Error) => {
        throw new Stop(notTested(`the harness cannot store an earlier delivery's messages in ${S.events} (${err.message})`));
      });
      await view.publishRaw(taskSubject(S, 'tap.test.echo'), JSON.stringify(record), { msgID: `${record.task_id}:submit` });
      const done = await view.finished(record.task_id, ctx.scaled(10_000));
      return verdictOf(
        'state.attempts 2, as the stored task.result',
        check(done !== undefined, `no finished record in ${S.results}`, 'a finished record', 'none'),
        done &&
          check(
            done.state.attempts === 2,
            "the finished record's state.attempts is not the attempts of the delivery that finished the phase (the stored task.result's Tap-Attempt 2)",
            '2',
            show(done.state.attempts),
          ),
      );
    },
  }),
  durableCase({
    id: 'nats-durable.queue.target-agent',
    title: 'A record whose target_agent names another agent is handed back, never run: nothing in its stream, no finished record',
    requirements: ['TAP-NATS-055'],
    capability: 'tap.test.sleep',
    run: async (ctx, view) => {
      const other = `${view.agentId}.not-this-one`;
      const { record, seq } = await view.publish(
        'tap.test.sleep',
        { ms: 1 },
        {
          record: (r) => ({ ...r, requirements: { ...r.requirements, target_agent: other } }),
        },
      );
      try {
        // Time for a few deliveries: each is handed back at once.
        const entries = await view.stream(record.task_id, (e) => e.length > 0, ctx.scaled(2000));
        const done = await view.finished(record.task_id, ctx.scaled(200));
        return verdictOf(
          'handed back, not run',
          check(
            entries.length === 0,
            `the agent ran a record whose requirements.target_agent is ${other}: its stream in ${S.events} holds ${show(entries.map((e) => e.message.type))}`,
            'an empty stream',
            `${entries.length} messages`,
          ),
          check(
            done === undefined,
            `the agent finished a record for ${other} in ${S.results}`,
            'no finished record',
            show(done?.state.status),
          ),
        );
      } finally {
        // The record would go round until max_deliver: the harness takes it off the queue.
        await view.jsm.streams.deleteMessage(S.tasks, seq).catch(() => false);
      }
    },
  }),
];
