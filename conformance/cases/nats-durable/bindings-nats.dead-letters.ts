/** nats-durable profile, Dead letters (spec: bindings-nats#dead-letters). */
import type { Case } from '../../case.ts';
import { deliveriesOf, durableCase, FAIL_RETRYABLY, states } from './kit.ts';
import { check, show, verdictOf } from '../kit.ts';
import { deadSubject, DEFAULT_NAMES as S } from '../../../reference/jetstream/names.ts';

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
];
