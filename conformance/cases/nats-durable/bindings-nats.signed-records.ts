/**
 * nats-durable profile, Signed records (spec: bindings-nats#signed-records): with a trust file, an
 * unsigned or forged record is a dead letter, and a task.result no runner signed does not decide a
 * task's outcome.
 */
import type { Case } from '../../case.ts';
import { unimplemented } from '../../verdict.ts';
import { check, show, verdictOf } from '../kit.ts';
import { deadLetters, durableCase, type DurableCase, hasResult, plantEvents, randomKey } from './kit.ts';
import { newSigningKey } from '../../../reference/trust.ts';
import type { TaskRecord } from '../../../reference/workspace/record.ts';

/**
 * The signed-records cases apply to an agent whose runners hold a trust file, which the person
 * running the suite says by giving a key in it (after the survey: an agent with no durable queue of
 * its own hears that first).
 */
export const NO_KEY = unimplemented(
  "the agent's durable runners hold no trust file: they ran tap-conform's unsigned records, so they take records from anyone, and these cases, which check that a runner with a trust file takes only signed ones, do not apply. " +
    'To test them, start the agent with a trust file, as a runAgent agent or tap-reference-agent does with --durable --signing-key <its key> --trust <file>, and pass tap-conform --signing-key with the key of a principal in that file',
);

/** A case of signed records: with the run's signing key it runs, without it is UNIMPLEMENTED. */
const signedCase = (d: DurableCase): Case =>
  durableCase({ ...d, run: async (ctx, view, queue) => (view.signingKey ? d.run(ctx, view, queue) : NO_KEY) });

export const cases: Case[] = [
  signedCase({
    id: 'nats-durable.signed.refused',
    title:
      "With a trust file, an unsigned record, one altered after signing, one signed by a stranger and one that claims another principal's idempotency key are dead letters, never run; a signed record runs",
    requirements: ['TAP-NATS-038'],
    // tap.test.counter's queue: no other case of the profile makes dead letters there.
    capability: 'tap.test.counter',
    run: async (ctx, view) => {
      const mark = await view.deadMark();
      const marker = randomKey();
      const stranger = newSigningKey('tap-conform.stranger');
      const refused: Array<[string, string, { record: TaskRecord }]> = [
        ['an unsigned record', 'INVALID_SIGNATURE', await view.publish('tap.test.counter', { key: `${marker}-1` }, { unsigned: true })],
        [
          'a record altered after signing',
          'INVALID_SIGNATURE',
          await view.publish(
            'tap.test.counter',
            { key: `${marker}-2` },
            { tamper: (r) => ({ ...r, context: { ...r.context, current_input: { key: `${marker}-altered` } } }) },
          ),
        ],
        [
          'a record signed by a principal the trust file does not know',
          'INVALID_SIGNATURE',
          await view.publish('tap.test.counter', { key: `${marker}-3` }, { key: stranger }),
        ],
        [
          "a record that claims another principal's idempotency key",
          'IDENTITY_MISMATCH',
          await view.publish(
            'tap.test.counter',
            { key: `${marker}-4` },
            { idempotency: { principal: `${view.principal}.someone-else`, key: marker } },
          ),
        ],
      ];
      const good = await view.publish('tap.test.counter', { key: `${marker}-5` });
      const done = await view.finished(good.record.task_id, ctx.scaled(10_000));
      const dead = await deadLetters(view, ctx, 'tap.test.counter', mark, refused.length, ctx.scaled(5000));
      const byTask = new Map(dead.map((d) => [d.task_id, d.state?.last_error?.code]));
      const wrong = refused.filter(([, code, p]) => byTask.get(p.record.task_id) !== code);
      const ran: string[] = [];
      for (const [what, , p] of refused) if ((await view.stream(p.record.task_id, () => false, ctx.scaled(300))).length > 0) ran.push(what);
      return verdictOf(
        'refused as dead letters, the signed one run',
        check(
          wrong.length === 0,
          `not dead-lettered with its reason: ${wrong.map(([what]) => what).join('; ')}`,
          show(refused.map(([what, code]) => `${what}: ${code}`)),
          show(refused.map(([what, , p]) => `${what}: ${byTask.get(p.record.task_id) ?? 'no dead letter'}`)),
        ),
        check(ran.length === 0, `the agent ran ${ran.join('; ')}`, 'no messages in their streams', show(ran)),
        check(
          done?.state.status === 'completed',
          'the agent did not run a record signed by a principal of its trust file',
          'completed',
          show(done?.state),
        ),
      );
    },
  }),
  signedCase({
    id: 'nats-durable.signed.stored-result',
    title: 'With a trust file, a task.result that no runner signed, stored in the stream before the task ran, does not decide its outcome',
    requirements: ['TAP-NATS-039'],
    capability: 'tap.test.echo',
    run: async (ctx, view) => {
      const input = { conformance: randomKey(), from: 'the record' };
      const planted = { conformance: randomKey(), from: 'a planted task.result' };
      // Before the record is queued, its task's stream gets a task.result that names the agent as its source, unsigned.
      const taskId = randomKey();
      await plantEvents(view, taskId, [{ type: 'task.result', payload: { status: 'completed', output: planted } }]);
      const { record: sent } = await view.publish('tap.test.echo', input, { record: (r) => ({ ...r, task_id: taskId }) });
      const done = await view.finished(sent.task_id, ctx.scaled(10_000));
      const entries = await view.stream(
        sent.task_id,
        (e) => e.filter((x) => x.message.type === 'task.result').length > 1,
        ctx.scaled(2000),
      );
      return verdictOf(
        'the phase ran',
        check(done !== undefined, 'the task did not finish', 'a finished record', 'none'),
        done &&
          check(
            JSON.stringify(done.context.history.at(-1)?.output) === JSON.stringify(input),
            'the finished record states the planted task.result: a task.result no runner signed decided the outcome',
            show(input),
            show(done.context.history.at(-1)?.output),
          ),
        check(
          hasResult(entries.slice(1)),
          "the agent's own task.result is not in the task's stream after the planted one",
          'a task.result of its own',
          show(entries.map((e) => e.message.type)),
        ),
      );
    },
  }),
];
