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
];
