/**
 * The lease cases of the nats-durable profile (spec: bindings-nats#task-queue): a task that runs
 * longer than its lease (TAP-NATS-018), and a delivery that waits for a place longer than its lease
 * (TAP-NATS-072). For the second, the case publishes tasks of tap.test.sleep that outlive the
 * lease, two at a time, until the agent's runners leave some on the queue: every place they have
 * is busy, and the tasks left wait for the first to finish, longer than their lease. A runner that
 * pulled one ahead of its places and left it unrenewed lets the server deliver it again, and it
 * runs twice.
 */
import type { CaseContext } from '../../context.ts';
import { LONGEST_LEASE_MS } from '../../options.ts';
import { notTested, type Outcome, skipped } from '../../verdict.ts';
import { check, show, verdictOf } from '../kit.ts';
import type { DurableView, Entry, Queue } from './durable-view.ts';
import { DEFAULT_NAMES as S } from '../../../reference/jetstream/names.ts';
import { seconds } from './durable-survey.ts';
import { hasResult, states, waiting } from './kit.ts';

/** The most tasks the case publishes; an agent that takes them all at once has a place for each, and none waits. */
export const MOST_PLACES = 16;
/** How many tasks the case publishes at a time while the agent's runners take every one. */
const STEP = 2;

/** A task of the case: its record's id and its sequence in TAP_TASKS. */
interface Published {
  taskId: string;
  seq: number;
}

/** How long each task of the case sleeps: beyond its lease by a quarter of it, and by a second at least. */
export const outlivingMs = (ackWaitMs: number): number => ackWaitMs + Math.max(1000, Math.round(ackWaitMs / 4));

/** The last stream sequence the consumer delivered, once it holds still between two reads. */
async function settledDelivery(ctx: CaseContext, view: DurableView, q: Queue, least: number): Promise<number> {
  const until = Date.now() + ctx.scaled(2000);
  let delivered = -1;
  for (;;) {
    await ctx.sleep(ctx.scaled(150));
    const now = (await view.jsm.consumers.info(S.tasks, q.consumer)).delivered.stream_seq;
    if ((now === delivered && now >= least) || Date.now() > until) return now;
    delivered = now;
  }
}

/**
 * Publishes tasks STEP at a time until the agent's runners leave some on the queue (or MOST_PLACES
 * are out): every place is then busy, and what a runner took beyond its places, it holds.
 */
async function fillPlaces(ctx: CaseContext, view: DurableView, q: Queue, hold: number): Promise<{ tasks: Published[]; taken: number }> {
  const tasks: Published[] = [];
  while (tasks.length < MOST_PLACES) {
    for (let i = 0; i < STEP; i++) {
      const { record, seq } = await view.publish('tap.test.sleep', { ms: hold });
      tasks.push({ taskId: record.task_id, seq });
    }
    const delivered = await settledDelivery(ctx, view, q, tasks[0]!.seq);
    const taken = tasks.filter((t) => t.seq <= delivered).length;
    if (taken < tasks.length) return { tasks, taken };
  }
  return { tasks, taken: tasks.length };
}

/** A task's stream read to its end: its result, or a second delivery. */
const ended = (entries: Entry[]): boolean => hasResult(entries) || states(entries).length > 1;

/** NOT-TESTED when the lease of tap.test.sleep is longer than a case waits out; `what` says what the case would wait for. */
function leaseTooLong(q: Queue, what: string): Outcome | null {
  if (q.ackWaitMs <= LONGEST_LEASE_MS) return null;
  return notTested(
    `the lease of tap.test.sleep is ${seconds(q.ackWaitMs)} (the ack_wait of consumer ${q.consumer}), longer than the ${seconds(LONGEST_LEASE_MS)} this case waits out (${what}; see tap-conform --help): start the agent with a shorter lease to test it`,
  );
}

/** nats-durable.lease.renewal: a task of 2.5 leases is delivered once (TAP-NATS-018). */
export async function judgeRenewal(ctx: CaseContext, view: DurableView, q: Queue): Promise<Outcome> {
  const tooLong = leaseTooLong(q, 'a task of 2.5 leases');
  if (tooLong) return tooLong;
  const ms = Math.round(q.ackWaitMs * 2.5);
  ctx.note(`ack_wait ${q.ackWaitMs} ms: a sleep of ${ms} ms outlives it twice`);
  const { record } = await view.publish('tap.test.sleep', { ms });
  // Ends at the result, or at a second delivery: a lease that was not renewed shows at once.
  const entries = await waiting(
    ctx,
    `a task of ${seconds(ms)} outlives the lease of tap.test.sleep (ack_wait ${seconds(q.ackWaitMs)}) twice`,
    ms,
    view.stream(record.task_id, (e) => hasResult(e) || states(e).length > 1, ctx.scaled(ms + q.ackWaitMs + 5000)),
  );
  const runs = states(entries);
  const done = await view.finished(record.task_id, ctx.scaled(2000));
  return verdictOf(
    `delivered once over ${ms} ms`,
    check(
      runs.length <= 1,
      `the record was delivered ${runs.length} times while the agent ran it for ${ms} ms with ack_wait ${q.ackWaitMs} ms: the lease was not renewed`,
      'one delivery (one running event)',
      show(runs.map((e) => `attempt ${e.attempt}`)),
    ),
    check(hasResult(entries), `the sleep of ${ms} ms did not finish`, 'a task.result', show(entries.map((e) => e.message.type))),
    check(
      runs.length === 1,
      `the record was delivered ${runs.length} times while the agent ran it for ${ms} ms with ack_wait ${q.ackWaitMs} ms: the lease was not renewed`,
      'one delivery (one running event)',
      show(runs.map((e) => `attempt ${e.attempt}`)),
    ),
    done &&
      check(
        done.state.attempts === 0,
        'the task finished on a later delivery than the first',
        'state.attempts 0',
        show(done.state.attempts),
      ),
  );
}

/**
 * nats-durable.lease.waiting (TAP-NATS-072): fill the agent's places and leave tasks waiting; each
 * task that began only after another had finished waited longer than its lease, and must have been
 * delivered once. SKIPPED when the agent took every task at once, or none waited, twice.
 */
export async function judgeWaiting(ctx: CaseContext, view: DurableView, q: Queue): Promise<Outcome> {
  const tooLong = leaseTooLong(q, 'a task waits more than a lease for a place');
  if (tooLong) return tooLong;
  const hold = outlivingMs(q.ackWaitMs);
  for (let round = 1; ; round++) {
    const { tasks, taken } = await fillPlaces(ctx, view, q, hold);
    // About one hold for the tasks taken, and one more for each round of those left; the bound
    // allows for a runner that runs one at a time whatever it took.
    const expected = hold * (1 + Math.ceil((tasks.length - taken) / Math.max(1, taken)));
    const streams = await waiting(
      ctx,
      `${tasks.length} tasks of ${seconds(hold)} (a lease of ${seconds(q.ackWaitMs)} and more) for the agent's places`,
      expected,
      Promise.all(tasks.map((t) => view.stream(t.taskId, ended, ctx.scaled(hold * (tasks.length + 1) + q.ackWaitMs + 5000)))),
    );
    const finished = await Promise.all(tasks.map((t) => view.finished(t.taskId, ctx.scaled(2000))));
    // The server stores every task's messages in one order: a task whose first run came after a
    // result had waited for that place from the start, one hold, longer than its lease.
    const firstResult = Math.min(
      ...streams
        .flat()
        .filter((e) => e.message.type === 'task.result')
        .map((e) => e.streamSeq),
    );
    const waited = tasks.map((t, i) => ({ ...t, runs: states(streams[i]!), entries: streams[i]!, done: finished[i] }));
    const judged = waited.filter((t) => t.runs.length > 0 && t.runs[0]!.streamSeq > firstResult);
    if (judged.length === 0) {
      const allAtOnce = tasks.length === MOST_PLACES && waited.every((t) => t.runs.length > 0 && t.runs[0]!.streamSeq < firstResult);
      if (!allAtOnce && round < 2) continue;
      const why = allAtOnce
        ? `the agent began all ${MOST_PLACES} tasks of tap.test.sleep at once: it has a place for each, so none waited for one`
        : `no task of tap.test.sleep began after another had finished: none waited for a place`;
      return skipped(`${why} (TAP-NATS-072 is about a delivery that waits)`);
    }
    const twice = (t: (typeof waited)[number]) =>
      `task ${t.taskId} waited for a place longer than its lease of ${q.ackWaitMs} ms while other tasks held every place, and was delivered again: the delivery that waited was not renewed`;
    const bad = judged.find((t) => t.runs.length > 1 || t.runs[0]!.attempt !== '0' || (t.done && t.done.state.attempts !== 0));
    const unfinished = waited.find((t) => !hasResult(t.entries));
    return verdictOf(
      `${judged.length} tasks that waited for a place longer than their lease were delivered once`,
      bad
        ? check(
            false,
            twice(bad),
            'one delivery (one running event, Tap-Attempt 0, state.attempts 0)',
            show({ runs: bad.runs.map((e) => `attempt ${e.attempt}`), attempts: bad.done?.state.attempts }),
          )
        : null,
      unfinished
        ? check(false, `task ${unfinished.taskId} did not finish`, 'a task.result', show(unfinished.entries.map((e) => e.message.type)))
        : null,
    );
  }
}
