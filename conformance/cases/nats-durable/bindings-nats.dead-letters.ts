/** nats-durable profile, Dead letters (spec: bindings-nats#dead-letters). */
import type { Case } from '../../case.ts';
import { deliveriesOf, durableCase, FAIL_RETRYABLY, states } from './kit.ts';
import { check, show, verdictOf } from '../kit.ts';
import { deadSubject, DEFAULT_NAMES as S } from '../../../reference/jetstream/names.ts';
import { maxDeliveriesAdvisory } from '../../../reference/transports/nats/subjects.ts';
import type { DurableView } from './durable-view.ts';
import { storedOn } from './durable-leftovers.ts';
import type { CaseContext } from '../../context.ts';

export const cases: Case[] = [
  durableCase({
    id: 'nats-durable.dead-letter',
    title: 'A record that ran out of deliveries is in TAP_DEAD, failed with MAX_ATTEMPTS and its delivery count, and off the queue',
    requirements: ['TAP-NATS-021', 'TAP-NATS-029'],
    capability: 'tap.test.fail',
    budgetMs: 40_000,
    run: async (ctx, view, q) => {
      deliveriesOf(q, 1);
      const mark = await view.deadMark();
      const { record, seq } = await view.publish('tap.test.fail', FAIL_RETRYABLY);
      // The deliveries first (each failing at once), then the advisory's dead letter within moments.
      await view.stream(record.task_id, (e) => states(e).length >= q.maxDeliver, ctx.scaled(q.maxDeliver * q.ackWaitMs + 10_000));
      const dead = await view.dead('tap.test.fail', record.task_id, mark, ctx.scaled(q.ackWaitMs + 2000));
      if (!dead)
        return verdictOf(
          '',
          check(
            false,
            `the record was not in ${S.dead} after ${q.maxDeliver} failed deliveries`,
            `a dead letter on ${deadSubject(S, 'tap.test.fail')}`,
            'none',
          ),
        );
      const off = await view.drained(seq, ctx.scaled(2000));
      const message = dead.state.last_error?.message ?? '';
      return verdictOf(
        'dead-lettered',
        check(dead.state.status === 'failed', 'the dead letter is not failed', 'failed', show(dead.state.status)),
        check(
          dead.state.last_error?.code === 'MAX_ATTEMPTS',
          'the dead letter does not give MAX_ATTEMPTS as its reason',
          'MAX_ATTEMPTS',
          show(dead.state.last_error),
        ),
        check(
          dead.state.attempts === q.maxDeliver,
          'the dead letter does not carry the deliveries it had in state.attempts',
          String(q.maxDeliver),
          show(dead.state.attempts),
        ),
        check(
          message.includes(String(q.maxDeliver)),
          "the dead letter's last_error.message does not say how many deliveries it had",
          `a sentence with ${q.maxDeliver}`,
          show(message),
        ),
        check(off, `the dead letter is still on ${S.tasks}`, 'deleted from the queue', 'still queued'),
      );
    },
  }),
  durableCase({
    id: 'nats-durable.dead-letter.msg-id',
    title: 'A dead letter is published with Nats-Msg-Id <task_id>:dead:<sequence>, so the runners that answer one message store one letter',
    requirements: ['TAP-NATS-056'],
    capability: 'tap.test.sleep',
    run: async (ctx, view) => {
      const mark = await view.deadMark();
      // A record of another queue's phase: a dead letter at once (TAP-NATS-037), under its own task_id.
      // On tap.test.sleep's queue, where no other case counts dead letters.
      const { record, seq } = await view.publish('tap.test.sleep', { ms: 1 }, { record: (r) => ({ ...r, next_phase: 'tap.test.echo' }) });
      const deadline = Date.now() + ctx.scaled(10_000);
      let stored: { msgId: string; taskId: string } | undefined;
      while (!stored && Date.now() < deadline) {
        const info = await view.jsm.streams.info(S.dead).catch(() => null);
        for (let at = info?.state.last_seq ?? 0; !stored && at > mark; at--) {
          const m = await view.jsm.streams.getMessage(S.dead, { seq: at }).catch(() => null);
          if (m?.subject !== deadSubject(S, 'tap.test.sleep')) continue;
          const letter = (() => {
            try {
              return m.json<{ task_id?: unknown }>();
            } catch {
              return {};
            }
          })();
          if (letter.task_id === record.task_id) stored = { msgId: m.header?.get('Nats-Msg-Id') ?? '', taskId: record.task_id };
        }
        if (!stored) await ctx.sleep(50);
      }
      const want = `${record.task_id}:dead:${seq}`;
      return verdictOf(
        `Nats-Msg-Id ${want}`,
        check(stored !== undefined, `no dead letter in ${S.dead} for a record of another queue's phase`, 'a dead letter', 'none'),
        stored &&
          check(
            stored.msgId === want,
            `the dead letter's Nats-Msg-Id is not <task_id>:dead:<its stream sequence in ${S.tasks}>: runners that answer the same message would each store a letter`,
            want,
            show(stored.msgId || 'none'),
          ),
      );
    },
  }),
  durableCase({
    id: 'nats-durable.dead-letter.advisories',
    title:
      "The agent takes its queue's max-deliveries advisories from TAP_ADVISORIES, through the consumer named as its queue's, and acknowledges each once answered",
    requirements: ['TAP-NATS-071'],
    capability: 'tap.test.fail',
    budgetMs: 40_000,
    run: async (ctx, view, q) => {
      deliveriesOf(q, 1);
      const subject = maxDeliveriesAdvisory(S.tasks, q.consumer);
      const info = await view.jsm.consumers.info(S.advisories, q.consumer).catch(() => null);
      if (!info)
        return verdictOf(
          '',
          check(
            false,
            `there is no consumer ${q.consumer} of ${S.advisories}: the agent does not take its advisories from the stream, so one the server publishes while none of its runners is subscribed is lost, and its record stays on ${S.tasks} for good`,
            `consumer ${q.consumer} of ${S.advisories} filtering ${subject}`,
            'none',
          ),
        );
      const pulled = await pulledFrom(ctx, view, q.consumer);
      const mark = await view.deadMark();
      const { record, seq } = await view.publish('tap.test.fail', FAIL_RETRYABLY);
      const dead = await view.dead('tap.test.fail', record.task_id, mark, ctx.scaled(q.maxDeliver * q.ackWaitMs + 10_000));
      // The advisory leaves the work-queue stream when the runner acknowledges it, right after its answer.
      const left = dead ? await unanswered(ctx, view, subject, seq, ctx.scaled(q.ackWaitMs + 5000)) : undefined;
      return verdictOf(
        `advisories pulled from ${S.advisories} and acknowledged`,
        check(
          info.config.filter_subject === subject && !info.config.filter_subjects?.length,
          `consumer ${q.consumer} of ${S.advisories} does not take its queue consumer's advisories alone`,
          subject,
          show(info.config.filter_subject ?? info.config.filter_subjects ?? 'every subject'),
        ),
        check(
          info.config.ack_policy === 'explicit',
          `consumer ${q.consumer} of ${S.advisories} does not ask for explicit acknowledgement`,
          'explicit',
          show(info.config.ack_policy),
        ),
        check(pulled, `no one pulls from consumer ${q.consumer} of ${S.advisories}`, 'a pull request waiting', 'none in 2 s'),
        check(dead !== undefined, `the record was not in ${S.dead} after ${q.maxDeliver} failed deliveries`, 'a dead letter', 'none'),
        dead &&
          check(
            left === 0,
            `the advisory of the record that ran out of deliveries is still in ${S.advisories} after its dead letter: the agent did not acknowledge it`,
            'acknowledged (gone from the stream)',
            `still there`,
          ),
      );
    },
  }),
];

/** True when the consumer has a pull request waiting at some moment within 2 s (a runner between two pulls has none). */
async function pulledFrom(ctx: CaseContext, view: DurableView, consumer: string): Promise<boolean> {
  const deadline = Date.now() + ctx.scaled(2000);
  do {
    const c = await view.jsm.consumers.info(S.advisories, consumer).catch(() => null);
    if ((c?.num_waiting ?? 0) > 0) return true;
    await ctx.sleep(100);
  } while (Date.now() < deadline);
  return false;
}

/** How many advisories on `subject` naming TAP_TASKS sequence `seq` TAP_ADVISORIES still holds after waiting up to `ms` for none. */
async function unanswered(ctx: CaseContext, view: DurableView, subject: string, seq: number, ms: number): Promise<number> {
  const deadline = Date.now() + ms;
  for (;;) {
    let held = 0;
    for await (const m of storedOn(view.jsm, S.advisories, subject)) {
      try {
        if (m.json<{ stream_seq?: unknown }>().stream_seq === seq) held++;
      } catch {
        // Not an advisory: not this record's.
      }
    }
    if (held === 0 || Date.now() >= deadline) return held;
    await ctx.sleep(100);
  }
}
