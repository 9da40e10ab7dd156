/**
 * The nats-durable profile: the durable task queue of an agent named by nats://host:port/<agent_id>,
 * driven from outside through the NATS server (spec: bindings-nats#certification). The harness
 * publishes records of the conformance capabilities to the queues the survey found to be the
 * agent's own, and reads TAP_EVENTS, TAP_RESULTS, TAP_DEAD and TAP_IDEMPOTENCY; it consumes
 * nothing the agent consumes.
 */
import { DEFAULT_NAMES as S, deadSubject, eventSubject, taskSubject } from '../../reference/jetstream/names.ts';
import { recordFromDraft, type TaskRecord } from '../../reference/workspace/record.ts';
import { validateAgainst } from '../../reference/core/validate.ts';
import { defineCase, type Case } from '../case.ts';
import type { CaseContext } from '../context.ts';
import { LONGEST_LEASE_MS } from '../options.ts';
import { harnessError, notTested, type Outcome } from '../verdict.ts';
import { DurableView, connectTarget, type Entry, type Queue } from './durable-view.ts';
import { findingOutcome, seconds, surveyOf } from './durable-survey.ts';
import { attempt, check, show, Stop, verdictOf } from './kit.ts';

const P = 'nats-durable' as const;
const NATS = { binding: 'nats' as const };

/** The agent's own queue for a capability, as the survey found it; stops the case when it has none. */
type QueueOf = (capability: string) => Queue;

/**
 * Runs a case body against the agent's own queues: the run's survey first (a profile that does not
 * apply, or queues another agent serves, end every case alike), then a DurableView of its own.
 */
function durable(body: (ctx: CaseContext, view: DurableView, queue: QueueOf) => Promise<Outcome>): (ctx: CaseContext) => Promise<Outcome> {
  return attempt(async (ctx) => {
    const survey = await surveyOf(ctx);
    if (survey.stop) return survey.stop;
    const queue: QueueOf = (capability) => {
      const f = survey.findings.get(capability) ?? { kind: 'none' };
      if (f.kind === 'own') return f.queue;
      throw new Stop(findingOutcome(capability, f)!);
    };
    let view: DurableView | undefined;
    try {
      view = await DurableView.open(ctx).catch((err: Error) => {
        throw new Stop(harnessError(`the harness could not reach JetStream on the server again (${err.message})`));
      });
      return await body(ctx, view, queue);
    } finally {
      await view?.close();
    }
  });
}

/** How often a long wait tells the person running the suite how far it is. */
const PROGRESS_EVERY_MS = 15_000;

/** Resolves with `p`; a wait of `expectedMs` or more says what it waits for, then how long it has waited, every 15 s. */
async function waiting<T>(ctx: CaseContext, what: string, expectedMs: number, p: Promise<T>): Promise<T> {
  if (expectedMs < PROGRESS_EVERY_MS) return p;
  const t0 = Date.now();
  ctx.inform(`${ctx.caseId}: ${what}; waiting about ${seconds(expectedMs)}`);
  const timer = setInterval(
    () => ctx.inform(`${ctx.caseId}: waited ${seconds(Date.now() - t0)} of about ${seconds(expectedMs)}`),
    PROGRESS_EVERY_MS,
  );
  try {
    return await p;
  } finally {
    clearInterval(timer);
  }
}

const states = (entries: Entry[]): Entry[] => entries.filter((e) => e.message.type === 'task.event' && e.message.payload?.kind === 'state');
const hasResult = (entries: Entry[]): boolean => entries.some((e) => e.message.type === 'task.result');
const randomKey = (): string => `conformance-${Math.random().toString(36).slice(2, 12)}`;

/** The numbering rule of TAP-NATS-031: sequences 1, 2, 3 … in stream order. */
function numbered(entries: Entry[], what: string): Outcome | null {
  const seqs = entries.map((e) => e.message.sequence);
  const bad = seqs.findIndex((s, i) => s !== i + 1);
  return check(bad < 0, `${what}: the task's messages in ${S.events} are not numbered 1, 2, 3 … in order`, '1 … n', show(seqs));
}

export const natsDurableCases: Case[] = [
  defineCase({
    id: 'nats-durable.queue.work-queue',
    title: 'The stream TAP_TASKS has work-queue retention',
    profile: P,
    requirements: ['TAP-NATS-016'],
    needs: { ...NATS, capabilities: ['tap.test.echo'] },
    run: durable(async (_ctx, view, queue) => {
      queue('tap.test.echo');
      const info = await view.jsm.streams.info(S.tasks);
      return verdictOf(
        'work-queue retention',
        check(
          info.config.retention === 'workqueue',
          `${S.tasks} does not have work-queue retention`,
          'workqueue',
          show(info.config.retention),
        ),
      );
    }),
  }),
  defineCase({
    id: 'nats-durable.result.before-ack',
    title: 'A finished phase leaves the queue only after its finished record is stored, attempts 0, and its task.result before that',
    profile: P,
    requirements: ['TAP-NATS-019', 'TAP-NATS-020', 'TAP-NATS-032'],
    needs: { ...NATS, capabilities: ['tap.test.echo'] },
    run: durable(async (ctx, view, queue) => {
      queue('tap.test.echo');
      const input = { conformance: randomKey() };
      const { record, seq } = await view.publish('tap.test.echo', input);
      const gone = await view.drained(seq, ctx.scaled(10_000));
      if (!gone) return verdictOf('', check(false, 'the agent did not take the record off its queue', 'acknowledged', 'still queued'));
      // Acknowledged: the finished record must be stored already, and the stream's task.result before it.
      const done = await view.finished(record.task_id, 0);
      const entries = done ? await view.stream(record.task_id, (e) => hasResult(e), ctx.scaled(2000)) : [];
      const result = entries.find((e) => e.message.type === 'task.result');
      return verdictOf(
        'stored, then acknowledged',
        check(
          done !== undefined,
          'the delivery was acknowledged before its finished record was in TAP_RESULTS',
          'a finished record',
          'none',
        ),
        done &&
          check(
            validateAgainst('task-record.schema.json', done) === null,
            'the finished record does not match task-record.schema.json',
            'valid',
            show(done),
          ),
        done && check(done.state.status === 'completed', 'the echo did not finish completed', 'completed', show(done.state.status)),
        done &&
          check(done.state.attempts === 0, 'a first delivery finished with state.attempts other than 0', '0', show(done.state.attempts)),
        check(
          result !== undefined,
          `the finished record was stored but the task's stream in ${S.events} has no task.result`,
          'a task.result',
          show(entries.map((e) => e.message.type)),
        ),
        result &&
          check(
            result.message.payload?.status === 'completed' && JSON.stringify(result.message.payload?.output) === JSON.stringify(input),
            'the task.result in the stream differs from the finished record',
            `completed with ${show(input)}`,
            show(result.message.payload),
          ),
      );
    }),
  }),
  defineCase({
    id: 'nats-durable.lease.renewal',
    title: 'A task that runs longer than ack_wait is delivered once: the agent renews its lease',
    profile: P,
    requirements: ['TAP-NATS-018'],
    needs: { ...NATS, capabilities: ['tap.test.sleep'] },
    // The longest wait: 2.5 leases of the longest lease this case waits out, then one more lease.
    budgetMs: LONGEST_LEASE_MS * 3.5 + 20_000,
    run: durable(async (ctx, view, queue) => {
      const q = queue('tap.test.sleep');
      if (q.ackWaitMs > LONGEST_LEASE_MS)
        return notTested(
          `the lease of tap.test.sleep is ${seconds(q.ackWaitMs)} (the ack_wait of consumer ${q.consumer}), longer than the ${seconds(LONGEST_LEASE_MS)} this case waits out (a task of 2.5 leases; see tap-conform --help): start the agent with a shorter lease to test its renewal`,
        );
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
    }),
  }),
  defineCase({
    id: 'nats-durable.attempts.delivery-count',
    title: 'Each delivery of a record that keeps failing retryably runs with the attempt number of its delivery count',
    profile: P,
    spec: 'bindings-nats#retries',
    reason:
      "the deliveries of a record that keeps failing are the subject of Retries; the rule it checks is the task queue's count (TAP-NATS-019)",
    requirements: ['TAP-NATS-019', 'TAP-NATS-028', 'TAP-NATS-030', 'TAP-NATS-031'],
    needs: { ...NATS, capabilities: ['tap.test.fail'] },
    budgetMs: 40_000,
    run: durable(async (ctx, view, queue) => {
      const q = queue('tap.test.fail');
      if (q.maxDeliver < 2 || q.maxDeliver > 20)
        return notTested(`tap.test.fail's queue delivers a record ${q.maxDeliver} times; this case needs 2 to 20`);
      const { record } = await view.publish('tap.test.fail', { code: 'BUSY', retryable: true, message: 'retry me' });
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
    }),
  }),
  defineCase({
    id: 'nats-durable.dead-letter',
    title: 'A record that ran out of deliveries is in TAP_DEAD, failed with MAX_ATTEMPTS and its delivery count, and off the queue',
    profile: P,
    requirements: ['TAP-NATS-021', 'TAP-NATS-029'],
    needs: { ...NATS, capabilities: ['tap.test.fail'] },
    budgetMs: 40_000,
    run: durable(async (ctx, view, queue) => {
      const q = queue('tap.test.fail');
      if (q.maxDeliver < 1 || q.maxDeliver > 20)
        return notTested(`tap.test.fail's queue delivers a record ${q.maxDeliver} times; this case needs 1 to 20`);
      const mark = await view.deadMark();
      const { record, seq } = await view.publish('tap.test.fail', { code: 'BUSY', retryable: true, message: 'retry me' });
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
    }),
  }),
  defineCase({
    id: 'nats-durable.idempotency.repeat',
    title: "A repeat under the same idempotency key runs once, inside the server's window and past it (through TAP_IDEMPOTENCY)",
    profile: P,
    requirements: ['TAP-NATS-024', 'TAP-NATS-033'],
    needs: { ...NATS, capabilities: ['tap.test.counter'] },
    run: durable(async (ctx, view, queue) => {
      const q = queue('tap.test.counter');
      const idempotency = { principal: 'tap-conform', key: randomKey() };
      const input = { key: idempotency.key };
      const first = await view.publish('tap.test.counter', input, { idempotency });
      const within = await view.publish('tap.test.counter', input, { idempotency });
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
    }),
  }),
  defineCase({
    id: 'nats-durable.result.stored-result',
    title: 'A delivery whose task stream already ends with a task.result stores that result as the finished record and does not run again',
    profile: P,
    requirements: ['TAP-NATS-035'],
    needs: { ...NATS, capabilities: ['tap.test.echo'] },
    run: durable(async (ctx, view, queue) => {
      queue('tap.test.echo');
      const input = { conformance: randomKey() };
      const stored = { conformance: randomKey(), from: 'the stored task.result' };
      const record = recordFromDraft({ next_phase: 'tap.test.echo', input }) as TaskRecord;
      record.requirements.target_agent = view.agentId;
      // An earlier delivery that stored its running event and its task.result, then was lost before its finished record.
      const subject = eventSubject(S, record.task_id);
      const earlier = [
        { type: 'task.event', payload: { kind: 'state', state: 'running' } },
        { type: 'task.result', payload: { status: 'completed', output: stored } },
      ];
      for (const [i, m] of earlier.entries()) {
        const message = {
          protocol: 'tap/1.0',
          message_id: randomKey(),
          source: view.agentId,
          target: '*',
          timestamp: new Date().toISOString(),
          task_id: record.task_id,
          sequence: i + 1,
          ...m,
        };
        const h = view.lib.headers();
        h.set('Tap-Attempt', '0');
        await view.js.publish(subject, JSON.stringify(message), { msgID: `${record.task_id}:${i + 1}`, headers: h }).catch((err: Error) => {
          throw new Stop(notTested(`the harness cannot store an earlier delivery's messages in ${S.events} (${err.message})`));
        });
      }
      const ack = await view.js.publish(taskSubject(S, 'tap.test.echo'), JSON.stringify(record), { msgID: `${record.task_id}:submit` });
      const gone = await view.drained(ack.seq, ctx.scaled(10_000));
      const done = await view.finished(record.task_id, ctx.scaled(2000));
      const entries = await view.stream(record.task_id, (e) => e.length > earlier.length, ctx.scaled(1000));
      return verdictOf(
        'stored from the task.result, not run again',
        check(gone, 'the agent did not take the record off its queue', 'acknowledged', 'still queued'),
        check(
          done !== undefined,
          `no finished record in ${S.results} for a task whose stream ends with its task.result`,
          'a finished record',
          'none',
        ),
        done &&
          check(
            done.state.status === 'completed' && JSON.stringify(done.context.history.at(-1)?.output) === JSON.stringify(stored),
            'the finished record is not the one the stored task.result states: the phase ran again',
            `completed with ${show(stored)}`,
            show({ status: done.state.status, output: done.context.history.at(-1)?.output }),
          ),
        done &&
          check(
            done.state.attempts === 0,
            "the finished record's state.attempts is not the stored result's Tap-Attempt",
            '0',
            show(done.state.attempts),
          ),
        check(
          entries.length === earlier.length,
          `the agent published to a task stream in ${S.events} that already ended with its task.result`,
          show(earlier.map((m) => m.type)),
          show(entries.map((e) => e.message.type)),
        ),
      );
    }),
  }),
  defineCase({
    id: 'nats-durable.resume.replay',
    title: 'A requester that lost its connection resumes a durable task from last_sequence out of TAP_EVENTS',
    profile: P,
    requirements: ['TAP-NATS-022', 'TAP-NATS-023', 'TAP-NATS-031', 'TAP-NATS-032'],
    needs: { ...NATS, capabilities: ['tap.test.stream'] },
    run: durable(async (ctx, view, queue) => {
      queue('tap.test.stream');
      const count = 4;
      const { record } = await view.publish('tap.test.stream', { count, interval_ms: 50 });
      // A requester follows the stream on a connection of its own, and loses it after two messages.
      const lost = await connectTarget(ctx, view.lib);
      const seen = await view.stream(record.task_id, (e) => e.length >= 2, ctx.scaled(10_000), lost);
      await lost.close();
      if (seen.length < 2)
        return verdictOf(
          '',
          check(false, `the task's stream in ${S.events} got fewer than two messages`, `${count + 2} messages`, show(seen.length)),
        );
      const last = seen.at(-1)!.message.sequence as number;
      const again = await connectTarget(ctx, view.lib);
      let rest: Entry[];
      try {
        rest = (await view.stream(record.task_id, hasResult, ctx.scaled(10_000), again)).filter((e) => e.message.sequence > last);
      } finally {
        await again.close();
      }
      const all = [...seen, ...rest];
      const result = all.find((e) => e.message.type === 'task.result');
      const done = await view.finished(record.task_id, ctx.scaled(2000));
      const ids = all.filter((e) => e.msgId !== `${record.task_id}:${e.message.sequence}`);
      const foreign = all.filter(
        (e) => e.message.task_id !== record.task_id || e.message.source !== view.agentId || 'session_id' in e.message,
      );
      return verdictOf(
        `replayed ${rest.length} messages after sequence ${last}`,
        check(result !== undefined, 'the resumed stream has no task.result', 'a task.result last', show(all.map((e) => e.message.type))),
        check(
          all.at(-1)?.message.type === 'task.result',
          'the task.result is not the last message of the stream',
          'task.result last',
          show(all.map((e) => e.message.type)),
        ),
        numbered(all, 'before and after the lost connection'),
        check(
          all.length === count + 2,
          `the stream of ${count} outputs does not hold running, each output and the result`,
          String(count + 2),
          show(all.length),
        ),
        check(
          ids.length === 0,
          'a message of the stream lacks the Nats-Msg-Id <task_id>:<sequence>',
          `${record.task_id}:<sequence>`,
          show(ids.map((e) => e.msgId)),
        ),
        check(
          foreign.length === 0,
          'a message of the stream names another task or source, or carries a session_id',
          `task ${record.task_id} from ${view.agentId}, no session_id`,
          show(foreign.map((e) => e.message)),
        ),
        result &&
          done &&
          check(
            JSON.stringify(result.message.payload?.output) === JSON.stringify(done.context.history.at(-1)?.output),
            'the replayed task.result differs from the finished record',
            show(done.context.history.at(-1)?.output),
            show(result.message.payload),
          ),
      );
    }),
  }),
];
