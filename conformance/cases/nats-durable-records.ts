/**
 * The nats-durable cases of what a runner takes from its queue (spec: bindings-nats#task-queue,
 * bindings-nats#signed-records): a message that is not a task record of the queue is a dead letter
 * at once and never widens a lookup; with a trust file, an unsigned or forged record is a dead
 * letter, and a task.result no runner signed does not decide a task's outcome.
 */
import { DEFAULT_NAMES as S, deadSubject, eventSubject, taskSubject } from '../../reference/jetstream/names.ts';
import { newSigningKey } from '../../reference/trust.ts';
import type { TaskRecord } from '../../reference/workspace/record.ts';
import { defineCase, type Case } from '../case.ts';
import type { CaseContext } from '../context.ts';
import type { DurableView } from './durable-view.ts';
import { unimplemented } from '../verdict.ts';
import { check, show, verdictOf } from './kit.ts';
import { durable, hasResult, randomKey } from './nats-durable.ts';

const P = 'nats-durable' as const;
const NATS = { binding: 'nats' as const };

/** Waits until `capability` has at least `n` dead letters after `mark`, or `ms` pass; resolves with those there are. */
async function deadLetters(
  view: DurableView,
  ctx: CaseContext,
  capability: string,
  mark: number,
  n: number,
  ms: number,
): Promise<TaskRecord[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = await view.deadAfter(capability, mark);
    if (found.length >= n || Date.now() > deadline) return found;
    await ctx.sleep(50);
  }
}

/**
 * The signed-records cases apply to an agent whose runners hold a trust file, which the person
 * running the suite says by giving a key in it (after the survey: an agent with no durable queue of
 * its own hears that first).
 */
const NO_KEY = unimplemented(
  'no signing key was given: for an agent whose durable runners hold a trust file, pass --signing-key with the key of a principal in it',
);

/** True when a subject holds a wildcard token: a record's value made it a lookup of many subjects. */
const widened = (subject: string): boolean => subject.split('.').some((t) => t === '*' || t === '>');

const REFUSED = ['MALFORMED_MESSAGE', 'INVALID_MESSAGE', 'MESSAGE_TOO_LARGE'];

export const natsDurableRecordCases: Case[] = [
  defineCase({
    id: 'nats-durable.record.invalid',
    title:
      "A queue message that is not a task record of the queue (a wildcard task_id, null, an array, another capability's record) is a dead letter at once, never run and never finished with another task's result",
    level: 'MUST',
    profile: P,
    spec: 'bindings-nats#task-queue',
    requirements: ['TAP-NATS-037'],
    needs: { ...NATS, capabilities: ['tap.test.echo'] },
    run: durable(async (ctx, view, queue) => {
      queue('tap.test.echo');
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
          const ack = await view.js.publish(taskSubject(S, 'tap.test.echo'), bytes, { msgID: `${marker}:${i}` });
          seqs.push(ack.seq);
        }
      }
      const dead = await deadLetters(view, ctx, 'tap.test.echo', mark, bad.length, ctx.scaled(10_000));
      const codes = dead.map((d) => d.state?.last_error?.code);
      const queued: number[] = [];
      for (const seq of seqs) if (await view.queued(seq)) queued.push(seq);
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
        check(queued.length === 0, `${queued.length} of the messages are still on ${S.tasks}`, 'none left', show(queued)),
      );
    }),
  }),
  defineCase({
    id: 'nats-durable.signed.refused',
    title:
      "With a trust file, an unsigned record, one altered after signing, one signed by a stranger and one that claims another principal's idempotency key are dead letters, never run; a signed record runs",
    level: 'MUST',
    profile: P,
    spec: 'bindings-nats#signed-records',
    requirements: ['TAP-NATS-038'],
    needs: { ...NATS, capabilities: ['tap.test.counter'] },
    run: durable(async (ctx, view, queue) => {
      // tap.test.counter's queue: no other case of the profile makes dead letters there.
      queue('tap.test.counter');
      if (!view.signingKey) return NO_KEY;
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
    }),
  }),
  defineCase({
    id: 'nats-durable.signed.stored-result',
    title: 'With a trust file, a task.result that no runner signed, stored in the stream before the task ran, does not decide its outcome',
    level: 'MUST',
    profile: P,
    spec: 'bindings-nats#signed-records',
    requirements: ['TAP-NATS-039'],
    needs: { ...NATS, capabilities: ['tap.test.echo'] },
    run: durable(async (ctx, view, queue) => {
      queue('tap.test.echo');
      if (!view.signingKey) return NO_KEY;
      const input = { conformance: randomKey(), from: 'the record' };
      const planted = { conformance: randomKey(), from: 'a planted task.result' };
      // Before the record is queued, its task's stream gets a task.result that names the agent as its source, unsigned.
      const taskId = randomKey();
      const h = view.lib.headers();
      h.set('Tap-Attempt', '0');
      const forged = {
        protocol: 'tap/1.0',
        message_id: randomKey(),
        type: 'task.result',
        source: view.agentId,
        target: '*',
        timestamp: new Date().toISOString(),
        task_id: taskId,
        sequence: 1,
        payload: { status: 'completed', output: planted },
      };
      await view.js.publish(eventSubject(S, taskId), JSON.stringify(forged), { msgID: `${taskId}:1`, headers: h });
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
    }),
  }),
];
