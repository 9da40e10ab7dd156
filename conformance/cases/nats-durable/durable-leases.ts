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

/** A task of the case: its record's id, its sequence in TAP_TASKS, and by when the consumer had surely delivered it (ms, this clock). */
interface Published {
  taskId: string;
  seq: number;
  deliveredBy?: number;
}

/** How long each task of the case sleeps: beyond its lease by a quarter of it, and by a second at least. */
export const outlivingMs = (ackWaitMs: number): number => ackWaitMs + Math.max(1000, Math.round(ackWaitMs / 4));

/**
 * Reads the consumer until the last stream sequence it delivered holds still between two reads
 * (at least the first task's), and marks each task it delivered with the time of the first read that showed it.
 */
async function settledDelivery(ctx: CaseContext, view: DurableView, q: Queue, tasks: Published[]): Promise<number> {
  const until = Date.now() + ctx.scaled(2000);
  let delivered = -1;
  for (;;) {
    await ctx.sleep(ctx.scaled(150));
    const now = await markDelivered(view, q, tasks);
    if ((now === delivered && now >= tasks[0]!.seq) || Date.now() > until) return now;
    delivered = now;
  }
}

/** Reads the last stream sequence the consumer delivered, and marks each task it delivered with the time of the first read that showed it. */
async function markDelivered(view: DurableView, q: Queue, tasks: Published[]): Promise<number> {
  const delivered = (await view.jsm.consumers.info(S.tasks, q.consumer)).delivered.stream_seq;
  const at = Date.now();
  for (const t of tasks) if (t.seq <= delivered) t.deliveredBy ??= at;
  return delivered;
}

/** Marks the tasks' deliveries every quarter of a second until `p` settles: when a runner took each, at the latest. */
async function watchingDeliveries<T>(ctx: CaseContext, view: DurableView, q: Queue, tasks: Published[], p: Promise<T>): Promise<T> {
  let done = false;
  const watch = (async () => {
    while (!done && tasks.some((t) => t.deliveredBy === undefined)) {
      await ctx.sleep(250);
      await markDelivered(view, q, tasks).catch(() => 0);
    }
  })();
  try {
    return await p;
  } finally {
    done = true;
    await watch;
  }
}

/**
 * Publishes tasks STEP at a time until the agent's runners leave some on the queue (or MOST_PLACES
 * are out): every place is then busy, and what a runner took beyond its places, it holds. `start`
 * is when the first was published: no place frees before start + hold.
 */
async function fillPlaces(
  ctx: CaseContext,
  view: DurableView,
  q: Queue,
  hold: number,
): Promise<{ tasks: Published[]; taken: number; start: number }> {
  const tasks: Published[] = [];
  const start = Date.now();
  while (tasks.length < MOST_PLACES) {
    for (let i = 0; i < STEP; i++) {
      const { record, seq } = await view.publish('tap.test.sleep', { ms: hold });
      tasks.push({ taskId: record.task_id, seq });
    }
    const delivered = await settledDelivery(ctx, view, q, tasks);
    const taken = tasks.filter((t) => t.seq <= delivered).length;
    if (taken < tasks.length) return { tasks, taken, start };
  }
  return { tasks, taken: tasks.length, start };
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
 * task that began only after another had finished waited for a place, and must have been delivered
 * once; one the agent took more than a lease before a place could free surely waited longer than
 * its lease. SKIPPED when the agent took every task at once, when none waited, or when none it took
 * ahead of a place surely waited a lease, twice.
 */
export async function judgeWaiting(ctx: CaseContext, view: DurableView, q: Queue): Promise<Outcome> {
  const tooLong = leaseTooLong(q, 'a task waits more than a lease for a place');
  if (tooLong) return tooLong;
  const hold = outlivingMs(q.ackWaitMs);
  /** Why a round was inconclusive: deliveries taken ahead of a place that did not surely wait a lease. */
  let unsure: string | undefined;
  for (let round = 1; ; round++) {
    const { tasks, taken, start } = await fillPlaces(ctx, view, q, hold);
    // About one hold for the tasks taken, and one more for each round of those left; the bound
    // allows for a runner that runs one at a time whatever it took.
    const expected = hold * (1 + Math.ceil((tasks.length - taken) / Math.max(1, taken)));
    // When the case first saw a result, read as the streams are: a place had freed by then.
    let resultSeen: number | undefined;
    const endedNoting = (entries: Entry[]): boolean => {
      if (resultSeen === undefined && hasResult(entries)) resultSeen = Date.now();
      return ended(entries);
    };
    const streams = await waiting(
      ctx,
      `${tasks.length} tasks of ${seconds(hold)} (a lease of ${seconds(q.ackWaitMs)} and more) for the agent's places`,
      expected,
      watchingDeliveries(
        ctx,
        view,
        q,
        tasks,
        Promise.all(tasks.map((t) => view.stream(t.taskId, endedNoting, ctx.scaled(hold * (tasks.length + 1) + q.ackWaitMs + 5000)))),
      ),
    );
    const finished = await Promise.all(tasks.map((t) => view.finished(t.taskId, ctx.scaled(2000))));
    // The server stores every task's messages in one order: a task whose first run came after a
    // result waited for that place, and no result came before start + hold. A delivery is the
    // runner's from when the consumer sent it (by deliveredBy at the latest): one sent before the
    // case saw the first result may have been taken ahead of a place, and one sent more than a
    // lease before start + hold surely waited longer than its lease. Only those are judged: a
    // loaded machine publishes and reads slowly, and a delivery taken later may not wait a lease
    // even when nothing renews it.
    const firstResult = Math.min(
      ...streams
        .flat()
        .filter((e) => e.message.type === 'task.result')
        .map((e) => e.streamSeq),
    );
    const waited = tasks.map((t, i) => ({ ...t, runs: states(streams[i]!), entries: streams[i]!, done: finished[i] }));
    const late = waited.filter((t) => t.runs.length > 0 && t.runs[0]!.streamSeq > firstResult);
    const placeFree = start + hold;
    const firstSeen = Math.max(placeFree, resultSeen ?? placeFree);
    const ahead = late.filter((t) => t.deliveredBy !== undefined && t.deliveredBy < firstSeen);
    const judged = ahead.filter((t) => placeFree - t.deliveredBy! > q.ackWaitMs);
    // A second delivery of a task that waited is the break however late its first was taken.
    const bad = late.find((t) => t.runs.length > 1 || t.runs[0]!.attempt !== '0' || (t.done && t.done.state.attempts !== 0));
    if (!bad && judged.length === 0 && (late.length === 0 || ahead.length > 0)) {
      const allAtOnce = tasks.length === MOST_PLACES && waited.every((t) => t.runs.length > 0 && t.runs[0]!.streamSeq < firstResult);
      const why = whyNoneJudged(allAtOnce, late, ahead, hold - q.ackWaitMs);
      if (ahead.length > 0) unsure = why;
      if (!allAtOnce && round < 2) continue;
      return skipped(why);
    }
    // Deliveries that waited on the queue pass only a run that never saw one taken ahead unsurely.
    if (!bad && judged.length === 0 && unsure) return skipped(unsure);
    const twice = (t: (typeof waited)[number]) =>
      `task ${t.taskId} waited for a place longer than its lease of ${q.ackWaitMs} ms while other tasks held every place, and was delivered again: the delivery that waited was not renewed`;
    const unfinished = waited.find((t) => !hasResult(t.entries));
    return verdictOf(
      judged.length > 0
        ? `${judged.length} tasks taken ahead of a place that waited for one longer than their lease were delivered once`
        : `the agent took none of the ${late.length} tasks that waited for a place before the first task ended: they waited on the queue, and each was delivered once`,
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

/** Why no task was judged: the agent had a place for each, none waited, or none of those it took ahead of a place surely waited a lease. */
function whyNoneJudged(allAtOnce: boolean, late: Published[], ahead: Published[], spareMs: number): string {
  const why = allAtOnce
    ? `the agent began all ${MOST_PLACES} tasks of tap.test.sleep at once: it has a place for each, so none waited for one`
    : late.length === 0
      ? 'no task of tap.test.sleep began after another had finished: none waited for a place'
      : `of the ${late.length} tasks of tap.test.sleep that waited for a place, the agent took ${ahead.length} ahead of one, but none within ${spareMs} ms of the first task's publication, so none surely waited longer than its lease: the agent took them late, or the case published and read slowly (a machine under load: run it again on an idle one)`;
  return `${why} (TAP-NATS-072 is about a delivery that waits)`;
}
