/** nats-durable profile, Retries (spec: bindings-nats#retries). */
import type { Case } from '../../case.ts';
import { deliveriesOf, durableCase, FAIL_RETRYABLY, hasResult, numbered, states } from './kit.ts';
import { check, show, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  durableCase({
    id: 'nats-durable.attempts.delivery-count',
    title: 'Each delivery of a record that keeps failing retryably runs with the attempt number of its delivery count',
    spec: 'bindings-nats#retries',
    reason:
      "the deliveries of a record that keeps failing are the subject of Retries; the rule it checks is the task queue's count (TAP-NATS-019)",
    requirements: ['TAP-NATS-019', 'TAP-NATS-028', 'TAP-NATS-030', 'TAP-NATS-031'],
    capability: 'tap.test.fail',
    budgetMs: 40_000,
    run: async (ctx, view, q) => {
      deliveriesOf(q, 2);
      const { record } = await view.publish('tap.test.fail', FAIL_RETRYABLY);
      const entries = await view.stream(
        record.task_id,
        (e) => states(e).length >= q.maxDeliver || hasResult(e),
        ctx.scaled(q.maxDeliver * q.ackWaitMs + 10_000),
      );
      await ctx.sleep(ctx.scaled(200));
      const runs = states(entries);
      const wrong = runs.findIndex((e, i) => e.attempt !== String(i));
      const unlabelled = entries.filter((e) => e.attempt === undefined);
      return verdictOf(
        `attempts 0 … ${q.maxDeliver - 1}`,
        check(
          !hasResult(entries),
          'a retryable failure was finished with a task.result instead of being handed back to the server',
          'no task.result',
          'a task.result',
        ),
        check(
          runs.length === q.maxDeliver,
          `the record was delivered ${runs.length} times; the queue's max_deliver is ${q.maxDeliver} and every delivery failed retryably`,
          `${q.maxDeliver} running events`,
          show(runs.length),
        ),
        check(
          wrong < 0,
          `delivery ${wrong + 1} ran with Tap-Attempt ${runs[wrong]?.attempt}: the attempt must be the delivery count less one`,
          show(runs.map((_, i) => String(i))),
          show(runs.map((e) => e.attempt)),
        ),
        check(
          unlabelled.length === 0,
          `${unlabelled.length} messages of the task's stream carry no Tap-Attempt header`,
          'Tap-Attempt on each',
          show(unlabelled.length),
        ),
        numbered(entries, 'over the redeliveries'),
      );
    },
  }),
];
