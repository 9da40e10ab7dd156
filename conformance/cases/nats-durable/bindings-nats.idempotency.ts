/** nats-durable profile, Idempotency over redelivery (spec: bindings-nats#idempotency). */
import type { Case } from '../../case.ts';
import { durableCase, hasResult, randomKey, states } from './kit.ts';
import type { DurableView, Entry } from './durable-view.ts';
import type { CaseContext } from '../../context.ts';
import { check, firstFailure, require, show, verdictOf } from '../kit.ts';
import { DEFAULT_NAMES as S, eventSubject } from '../../../reference/jetstream/names.ts';
import type { TaskRecord } from '../../../reference/workspace/record.ts';
import { notTested, skipped } from '../../verdict.ts';
import { LONGEST_LEASE_MS } from '../../options.ts';
import { seconds } from './durable-survey.ts';

/** The count in a finished record of tap.test.counter, or undefined. */
const countOf = (r: TaskRecord | undefined): unknown =>
  (r?.context.history.at(-1)?.output as { count?: unknown } | null | undefined)?.count;

/** How many times the redelivered-effect case sets up its held task, each with twice the hold of the last. */
const HOLD_ROUNDS = 3;

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
  durableCase({
    id: 'nats-durable.idempotency.redelivered-effect',
    title:
      'A task redelivered after its first delivery completed its effect keeps its task_id and its effects record: the effect is made once',
    requirements: ['TAP-NATS-025', 'TAP-CONF-121'],
    version: '1.1',
    capability: 'tap.test.counter',
    budgetMs: LONGEST_LEASE_MS * 2 + 60_000,
    run: async (ctx, view, q) => {
      if (q.ackWaitMs > LONGEST_LEASE_MS)
        return notTested(
          `the lease of tap.test.counter is ${seconds(q.ackWaitMs)} (the ack_wait of consumer ${q.consumer}), longer than the ${seconds(LONGEST_LEASE_MS)} this case waits for a fenced delivery to come again: start the agent with a shorter lease to test redelivery`,
        );
      const of11 = { record: (r: TaskRecord): TaskRecord => ({ ...r, protocol: 'tap/1.1' }) };
      // The fence must land while the held task holds. On a loaded machine the probe below can take
      // most of the hold: a held task that ended before the fence was planted proves nothing either
      // way, and the scenario starts again with a new key and twice the hold.
      let key = '';
      let taskId = '';
      let holdMs = 0;
      let fence = 0;
      let serialSeen = 0;
      for (let round = 0; round < HOLD_ROUNDS && fence === 0; round++) {
        key = randomKey();
        holdMs = Math.round(ctx.scaled(1500 * 2 ** round));
        const held = await view.publish('tap.test.counter', { key, hold_ms: holdMs }, of11);
        taskId = held.record.task_id;
        const begun = await view.stream(taskId, (e) => e.length >= 1, ctx.scaled(10_000));
        if (begun.length === 0) return verdictOf('', check(false, "the agent did not begin the task's stream", 'a running event', 'none'));
        // A second task of the key while the first holds: its count shows that the first one's effect is done.
        const probe = await view.publish('tap.test.counter', { key }, of11);
        const probeDone = await view.finished(probe.record.task_id, ctx.scaled(10_000));
        const early = await view.finished(taskId, 0);
        if (early !== undefined) {
          const timing = await timingOf(ctx, view, taskId, probe.record.task_id);
          if (timing.heldMs >= holdMs * 0.9) {
            if (timing.probeBeganAfter) {
              // Twice, or in the last round: a runner slow to begin a task under load is set up again first.
              if (serialSeen++ > 0 || round === HOLD_ROUNDS - 1) return skipped(oneAtATime(timing.heldMs, holdMs));
              ctx.note(
                `the task held ${Math.round(timing.heldMs)} ms, and the task of the same key began only after it ended: again with a longer hold, before the case takes the agent for one that runs a record at a time`,
              );
              continue;
            }
            // It held, and the second task ran beside it but took longer than the hold: again, longer.
            ctx.note(`the task held ${Math.round(timing.heldMs)} ms, and the task of the same key took longer: again with a longer hold`);
            continue;
          }
        }
        require(
          firstFailure(
            check(probeDone !== undefined, 'a task of tap.test.counter without hold_ms did not finish', 'a finished record', 'none'),
            check(
              early === undefined,
              `the task with hold_ms ${holdMs} finished before a task of the same key sent after its running event: it did not hold after its increment (TAP-CONF-121)`,
              `still running for ${holdMs} ms`,
              show(early && { status: early.state.status, output: early.context.history.at(-1)?.output }),
            ),
            check(
              countOf(probeDone) === 2,
              'the task of the same key sent while the task with hold_ms held did not count 2: the held task had not incremented before it held (TAP-CONF-121)',
              '2',
              show(countOf(probeDone)),
            ),
          ),
        );
        // Another delivery of the same record stored the message the holding delivery publishes next: the fence stops it.
        // A sequence the holding delivery stored meanwhile (a log of its own) is a duplicate: read again, and plant after it.
        const h = view.lib.headers();
        h.set('Tap-Attempt', '1');
        for (let tries = 0; tries < 5 && fence === 0; tries++) {
          const before = await view.stream(taskId, () => false, ctx.scaled(300));
          if (before.some((e) => e.message.type === 'task.result')) break;
          const next = (before.at(-1)?.message.sequence ?? 0) + 1;
          const other = {
            protocol: 'tap/1.1',
            message_id: randomKey(),
            type: 'task.event',
            source: view.agentId,
            target: '*',
            timestamp: new Date().toISOString(),
            task_id: taskId,
            sequence: next,
            payload: { kind: 'log', level: 'info', message: 'another delivery of this task' },
          };
          const ack = await view.js.publish(eventSubject(S, taskId), JSON.stringify(other), { msgID: `${taskId}:${next}`, headers: h });
          if (!ack.duplicate) fence = next;
        }
        if (fence === 0) ctx.note(`the task held ${holdMs} ms and ended before the harness could fence it: again with a longer hold`);
      }
      if (fence === 0)
        return notTested(
          `the harness could not fence the held task while it held, in ${HOLD_ROUNDS} tries up to a hold of ${holdMs} ms: the task of the same key ran past the hold, or the agent kept storing the task's next message first; run again on a less loaded machine`,
        );
      const done = await view.finished(taskId, ctx.scaled(2 * holdMs + 2 * q.ackWaitMs + 10_000));
      const entries = await view.stream(
        taskId,
        (e) => e.some((x) => x.message.sequence > fence && x.message.type === 'task.result'),
        ctx.scaled(2000),
      );
      const again = entries.filter((e) => e.message.sequence > fence);
      const after = await view.publish('tap.test.counter', { key }, of11);
      const afterDone = await view.finished(after.record.task_id, ctx.scaled(10_000));
      return verdictOf(
        'the effect was made once across two deliveries',
        check(done !== undefined, `no finished record in ${S.results} for the held task`, 'a finished record', 'none'),
        check(
          again.some(
            (e) =>
              e.message.type === 'task.event' && e.message.payload?.state === 'running' && e.attempt !== undefined && e.attempt !== '0',
          ),
          `the held task was not delivered again after its delivery was fenced at sequence ${fence} (TAP-NATS-036), so redelivery could not be seen`,
          'a running event of a later attempt after the fence',
          show(
            entries.map(
              (e) =>
                `${e.message.sequence} ${e.message.type} ${e.message.payload?.state ?? e.message.payload?.kind ?? ''} attempt ${e.attempt}`,
            ),
          ),
        ),
        check(
          again.every((e) => e.message.task_id === taskId) && (done === undefined || done.task_id === taskId),
          'the redelivery ran under another task_id',
          taskId,
          show([...new Set([...again.map((e) => e.message.task_id), done?.task_id])]),
        ),
        done &&
          check(
            countOf(done) === 1,
            'the redelivered task made its effect again: its result counts the increment its first delivery completed and its own',
            '{ count: 1 }',
            show(done.context.history.at(-1)?.output),
          ),
        check(
          countOf(afterDone) === 3,
          `a third task of the key does not count 3: the held task's two deliveries incremented the counter ${typeof countOf(afterDone) === 'number' ? (countOf(afterDone) as number) - 2 : '?'} times`,
          '3',
          show(countOf(afterDone)),
        ),
      );
    },
  }),
];

/** How long the held task held (its running event to its result), and whether the task of the same key began after its result. */
async function timingOf(
  ctx: CaseContext,
  view: DurableView,
  heldId: string,
  probeId: string,
): Promise<{ heldMs: number; probeBeganAfter: boolean }> {
  const held = await view.stream(heldId, hasResult, ctx.scaled(2000));
  const probe = await view.stream(probeId, (e) => e.length > 0, ctx.scaled(2000));
  const at = (e: Entry | undefined): number => Date.parse(String(e?.message.timestamp));
  const result = at(held.find((e) => e.message.type === 'task.result'));
  const heldMs = result - at(states(held)[0]);
  return { heldMs: Number.isFinite(heldMs) ? heldMs : 0, probeBeganAfter: at(probe[0]) >= result };
}

/** Why the case cannot run against an agent that runs one record of the queue at a time. */
const oneAtATime = (heldMs: number, holdMs: number): string =>
  `the agent held the task ${Math.round(heldMs)} ms (hold_ms ${holdMs}) and began the task of the same key only after it ended: it runs one record of tap.test.counter's queue at a time, and this case needs a second record to finish while the first holds, so it cannot see whether a redelivered task makes its effect again (TAP-NATS-025)`;
