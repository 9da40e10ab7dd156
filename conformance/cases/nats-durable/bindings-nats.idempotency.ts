/** nats-durable profile, Idempotency over redelivery (spec: bindings-nats#idempotency). */
import type { Case } from '../../case.ts';
import { durableCase, randomKey } from './kit.ts';
import { check, show, verdictOf } from '../kit.ts';
import { DEFAULT_NAMES as S } from '../../../reference/jetstream/names.ts';

export const cases: Case[] = [
  durableCase({
    id: 'nats-durable.idempotency.repeat',
    title: "A repeat under the same idempotency key runs once, inside the server's window and past it (through TAP_IDEMPOTENCY)",
    requirements: ['TAP-NATS-024', 'TAP-NATS-033'],
    capability: 'tap.test.counter',
    run: async (ctx, view, q) => {
      const idempotency = { principal: view.principal, key: randomKey() };
      const input = { key: idempotency.key };
      const first = await view.publish('tap.test.counter', input, { idempotency });
      // A signed record's message id ends with its signature (TAP-NATS-040): the server drops the same record sent again.
      const within = await view.publish('tap.test.counter', input, {
        idempotency,
        ...(view.signingKey ? { record: () => first.record } : {}),
      });
      const done = await view.finished(first.record.task_id, ctx.scaled(10_000));
      if (!done) return verdictOf('', check(false, 'the first task under the key did not finish', 'a finished record', 'none'));
      // Past the window the server no longer knows the message id: a publish under another id stands for it.
      ctx.note('publishing the repeat under a new Nats-Msg-Id, as a submit past the de-duplication window does');
      const past = await view.publish('tap.test.counter', input, {
        idempotency,
        msgId: `${idempotency.principal}:tap.test.counter:${idempotency.key}:late`,
      });
      const taken = await view.drained(past.seq, ctx.scaled(q.ackWaitMs + 10_000));
      await ctx.sleep(ctx.scaled(300));
      const repeatDone = await view.finished(past.record.task_id, 0);
      const repeatStream = await view.stream(past.record.task_id, () => false, ctx.scaled(500));
      const holder = await view.holder(idempotency.principal, 'tap.test.counter', idempotency.key);
      return verdictOf(
        'ran once',
        check(
          within.duplicate,
          `the server stored a repeat inside its de-duplication window: ${S.tasks} has no duplicate window`,
          'a duplicate acknowledgement',
          'stored',
        ),
        check(
          holder === first.record.task_id,
          `${S.idempotency} does not hold the first task for the key`,
          first.record.task_id,
          show(holder),
        ),
        check(taken, 'the agent did not take the repeat off its queue', 'acknowledged', 'still queued'),
        check(
          repeatDone === undefined,
          'the repeat past the window ran again: it has a finished record of its own',
          'no finished record',
          show(repeatDone?.state),
        ),
        check(
          repeatStream.length === 0,
          'the repeat past the window ran again: it has messages of its own in TAP_EVENTS',
          'no messages',
          show(repeatStream.map((e) => e.message.type)),
        ),
      );
    },
  }),
];
