import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import type { TaskRecord } from '../workspace/record.ts';
import { NO_NATS_SERVER, natsServerInstalled, startNatsServer, type NatsServer } from '../transports/nats/nats-server.testkit.ts';
import { durableConformanceHandlers } from './capabilities.ts';
import { lastStoredMessage, replayDurableTask, StreamFenced, TaskStreamWriter } from './events.ts';
import { startDurableRunner, type DurableRunner, type DurableRunnerOptions } from './runner.ts';
import { DEFAULT_NAMES, deadSubject, ensureStreams, eventSubject, resultSubject } from './streams.ts';
import { submitDurable } from './submit.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const AGENT = 'tap.durable-events';
const handlers = durableConformanceHandlers();

describe.skipIf(lacks('nats-server'))(
  needing('nats-server', 'durable task streams in TAP_EVENTS (spec: bindings-nats#event-streams)'),
  () => {
    let server: NatsServer;
    let nc: NatsConnection;
    const stops: Array<() => Promise<unknown>> = [];

    beforeAll(async () => {
      server = await startNatsServer();
      nc = await connect({ servers: server.url });
      await ensureStreams(nc);
    });
    afterEach(async () => {
      for (const s of stops.splice(0).reverse()) await s().catch(() => {});
    });
    afterAll(async () => {
      await nc?.close();
      await server?.stop();
    });

    async function runner(o: Partial<DurableRunnerOptions> & Pick<DurableRunnerOptions, 'capability'>, conn = nc): Promise<DurableRunner> {
      const r = await startDurableRunner({ nc: conn, agentId: AGENT, leaseMs: 300, handler: handlers[o.capability]!, ...o });
      stops.push(() => r.stop());
      return r;
    }

    async function stored<T>(get: () => Promise<T | null>, ms = 5000): Promise<T> {
      const deadline = Date.now() + ms;
      for (;;) {
        const v = await get().catch(() => null);
        if (v) return v;
        if (Date.now() > deadline) throw new Error(`nothing stored within ${ms} ms`);
        await sleep(25);
      }
    }

    const resultOf = async (taskId: string): Promise<TaskRecord> => {
      const jsm = await jetstreamManager(nc);
      const m = await stored(() => jsm.streams.getMessage(DEFAULT_NAMES.results, { last_by_subj: resultSubject(DEFAULT_NAMES, taskId) }));
      return m.json<TaskRecord>();
    };

    it('fences two writers of one task (TAP-NATS-036): a sequence another one stored is refused with StreamFenced, whichever type', async () => {
      const js = jetstream(nc);
      const jsm = await jetstreamManager(nc);
      const first = new TaskStreamWriter(js, DEFAULT_NAMES, AGENT, 'fenced-1', 0, 0);
      await first.publish('task.event', { kind: 'state', state: 'running' });
      // A second delivery of the record numbers on from what is stored now, and finishes.
      const last = (await lastStoredMessage(jsm, DEFAULT_NAMES, 'fenced-1'))!;
      const second = new TaskStreamWriter(js, DEFAULT_NAMES, AGENT, 'fenced-1', last.message.sequence, 1);
      await second.publish('task.event', { kind: 'state', state: 'running' });
      await second.publish('task.result', { status: 'completed', output: { by: 'second' } });
      // The first goes on as if alone: its next sequence is the second's running event.
      await expect(first.publish('task.result', { status: 'completed', output: { by: 'first' } })).rejects.toBeInstanceOf(StreamFenced);
      expect(first.nextSequence).toBe(2);
      const all = await replayDurableTask(nc, { taskId: 'fenced-1', untilResult: false });
      expect(all.map((s) => [s.message.sequence, s.attempt, s.message.type])).toEqual([
        [1, 0, 'task.event'],
        [2, 1, 'task.event'],
        [3, 1, 'task.result'],
      ]);
      // The replay leaves no consumer on TAP_EVENTS behind it (an ordered consumer would stay five minutes).
      const left: string[] = [];
      for await (const c of jsm.consumers.list(DEFAULT_NAMES.events))
        left.push(`${c.name} ${c.config.filter_subject ?? c.config.filter_subjects}`);
      expect(left.filter((c) => c.endsWith('fenced-1'))).toEqual([]);
    });

    it("takes a duplicate acknowledgement of the writer's own message (a publish sent twice) as stored, not as a fence", async () => {
      const js = jetstream(nc);
      // Every publish reaches the server twice, as a client that resends after a lost acknowledgement does.
      const twice = new Proxy(js, {
        get(target, prop, receiver) {
          if (prop !== 'publish') return Reflect.get(target, prop, receiver);
          return async (...args: Parameters<JetStreamClient['publish']>) => {
            await target.publish(...args);
            return target.publish(...args);
          };
        },
      });
      const writer = new TaskStreamWriter(twice, DEFAULT_NAMES, AGENT, 'resent-1', 0, 0);
      await writer.publish('task.event', { kind: 'state', state: 'running' });
      await writer.publish('task.result', { status: 'completed', output: null });
      const all = await replayDurableTask(nc, { taskId: 'resent-1', untilResult: false });
      expect(all.map((s) => [s.message.sequence, s.message.type])).toEqual([
        [1, 'task.event'],
        [2, 'task.result'],
      ]);
    });

    it('stops a delivery that finds another writing its task, unacknowledged; the next delivery stores the result the other stored', async () => {
      let started!: () => void;
      let release!: () => void;
      const holding = new Promise<void>((r) => (started = r));
      const released = new Promise<void>((r) => (release = r));
      const runs: number[] = [];
      const r = await runner({
        capability: 'work.fenced',
        handler: async ({ attempts }) => {
          runs.push(attempts);
          started();
          await released;
          return { by: 'runner' };
        },
      });
      const { record } = await submitDurable(nc, { next_phase: 'work.fenced', input: null });
      await holding;
      // Meanwhile a second delivery of the record (its lease ran out elsewhere) runs the phase to its result.
      const jsm = await jetstreamManager(nc);
      const last = (await lastStoredMessage(jsm, DEFAULT_NAMES, record.task_id))!;
      const other = new TaskStreamWriter(jetstream(nc), DEFAULT_NAMES, AGENT, record.task_id, last.message.sequence, 1);
      await other.publish('task.event', { kind: 'state', state: 'running' });
      await other.publish('task.result', { status: 'completed', output: { by: 'other' } });
      release();
      const done = await resultOf(record.task_id);
      expect(done.context.history.at(-1)?.output).toEqual({ by: 'other' });
      expect(done.state).toMatchObject({ status: 'completed', attempts: 1 });
      // The phase ran once here: the redelivery found the task.result and only stored the record.
      expect(runs).toEqual([0]);
      // The count follows the acknowledgement, which comes just after the finished record is stored.
      await vi.waitFor(() => expect(r.stats).toMatchObject({ fenced: 1, completed: 1 }), { timeout: 5000 });
      const all = await replayDurableTask(nc, { taskId: record.task_id, untilResult: false });
      expect(all.filter((s) => s.message.type === 'task.result')).toHaveLength(1);
      expect(all.map((s) => s.message.sequence)).toEqual([1, 2, 3]);
    });

    it('reads nothing to run a first delivery: its running event is stored on the condition that the stream is empty; it acknowledges without asking for an answer', async () => {
      // The runner's own connection, whose requests are told apart by their reply subjects.
      const own = await connect({ servers: server.url, inboxPrefix: '_INBOX_RUNNER' });
      stops.push(() => own.close());
      await runner({ capability: 'tap.test.echo' }, own);
      const watcher = await connect({ servers: server.url });
      stops.push(() => watcher.close());
      const asked: string[] = [];
      const acks: Array<[string, boolean]> = [];
      const conditions: Array<string | undefined> = [];
      watcher.subscribe('tap.events.>', {
        callback: (_err, m) => void conditions.push(m.headers?.get('Nats-Expected-Last-Subject-Sequence') || undefined),
      });
      watcher.subscribe('$JS.API.>', {
        callback: (_err, m) => {
          if (m.reply?.startsWith('_INBOX_RUNNER') && !m.subject.startsWith('$JS.API.CONSUMER.MSG.NEXT.')) asked.push(m.subject);
        },
      });
      watcher.subscribe('$JS.ACK.TAP_TASKS.>', {
        callback: (_err, m) => {
          acks.push([m.string() || '+ACK', Boolean(m.reply)]);
        },
      });
      await watcher.flush();
      const { record } = await submitDurable(nc, { next_phase: 'tap.test.echo', input: { n: 1 } });
      await resultOf(record.task_id);
      await vi.waitFor(() => expect(acks).toHaveLength(1), { timeout: 5000 });
      await own.flush();
      await watcher.flush();
      // Its pulls aside, the runner asked the server nothing: no read of its task's stream.
      expect(asked).toEqual([]);
      // The running event went on the condition of an empty stream; the task.result numbers on.
      expect(conditions).toEqual(['0', undefined]);
      const stored = await replayDurableTask(nc, { taskId: record.task_id, untilResult: false });
      expect(stored.map((x) => [x.message.sequence, x.message.type])).toEqual([
        [1, 'task.event'],
        [2, 'task.result'],
      ]);
      expect(acks).toEqual([['+ACK', false]]);
    });

    /**
     * Runs one task of `capability` to its end, then `meanwhile()`, then publishes its record again
     * under a message id the queue has not seen (a new message, delivered for the first time), and
     * checks that the runner acknowledged it at that first delivery without running it or adding to its stream.
     */
    async function publishedAgain(capability: string, meanwhile: () => Promise<void> = async () => {}): Promise<void> {
      const runs: number[] = [];
      const r = await runner({
        capability,
        handler: async ({ attempts }) => {
          runs.push(attempts);
          return 'done';
        },
      });
      const { record } = await submitDurable(nc, { next_phase: capability, input: null });
      await resultOf(record.task_id);
      await meanwhile();
      await jetstream(nc).publish(`tap.tasks.${capability}`, JSON.stringify(record), { msgID: `${record.task_id}:again` });
      await vi.waitFor(() => expect(r.stats.repeats).toBe(1), { timeout: 5000 });
      expect(runs).toEqual([0]);
      // Acknowledged at its first delivery: no lease ran out, nothing came again.
      expect(r.stats).toMatchObject({ completed: 1, repeats: 1, redelivered: 0 });
      const all = await replayDurableTask(nc, { taskId: record.task_id, untilResult: false });
      expect(all.map((x) => x.message.type)).toEqual(['task.event', 'task.result']);
    }

    it('acknowledges the first delivery of a record published again after its task finished, without running it or adding to its stream', async () => {
      await publishedAgain('work.again');
    });

    it('acknowledges a record published again once the stream has forgotten its message ids: the server refuses the condition of its first delivery', async () => {
      // TAP_EVENTS forgets the task's message ids: the running event's condition, not its id, now stops the delivery.
      await publishedAgain('work.later', async () => {
        const jsm = await jetstreamManager(nc);
        const { config } = await jsm.streams.info(DEFAULT_NAMES.events);
        const window = config.duplicate_window;
        await jsm.streams.update(DEFAULT_NAMES.events, { ...config, duplicate_window: 100_000_000 });
        stops.push(() => jsm.streams.update(DEFAULT_NAMES.events, { ...config, duplicate_window: window }).then(() => undefined));
        await sleep(400);
      });
    });

    it('publishes running, each output and the task.result numbered from 1, and the result before the finished record', async () => {
      await runner({ capability: 'tap.test.stream' });
      const { record } = await submitDurable(nc, { next_phase: 'tap.test.stream', input: { count: 3 } });
      const done = await resultOf(record.task_id);
      // The finished record is stored: the stream already holds its result, without waiting.
      const all = await replayDurableTask(nc, { taskId: record.task_id, untilResult: false });
      expect(all.map((s) => [s.message.sequence, s.message.type, s.message.payload.kind ?? s.message.payload.status])).toEqual([
        [1, 'task.event', 'state'],
        [2, 'task.event', 'output'],
        [3, 'task.event', 'output'],
        [4, 'task.event', 'output'],
        [5, 'task.result', 'completed'],
      ]);
      expect(all.every((s) => s.attempt === 0 && s.message.task_id === record.task_id && s.message.source === AGENT)).toBe(true);
      expect(all.at(-1)?.message.payload.output).toEqual(done.context.history.at(-1)?.output);
      // Every message carries Nats-Msg-Id <task_id>:<sequence>: publishing one again stores nothing.
      const jsm = await jetstreamManager(nc);
      const before = (await jsm.streams.info(DEFAULT_NAMES.events)).state.messages;
      const ack = await jetstream(nc).publish(eventSubject(DEFAULT_NAMES, record.task_id), JSON.stringify(all[0]!.message), {
        msgID: `${record.task_id}:1`,
      });
      expect(ack.duplicate).toBe(true);
      expect((await jsm.streams.info(DEFAULT_NAMES.events)).state.messages).toBe(before);
    });

    it('resumes a requester that lost its connection from last_sequence, on a new connection, with the messages it missed', async () => {
      await runner({ capability: 'tap.test.stream' });
      const { record } = await submitDurable(nc, { next_phase: 'tap.test.stream', input: { count: 4, interval_ms: 100 } });
      const first = await connect({ servers: server.url });
      const part = await replayDurableTask(first, { taskId: record.task_id, untilResult: false });
      await first.close();
      const last = part.at(-1)?.message.sequence ?? 0;
      const second = await connect({ servers: server.url });
      try {
        const rest = await replayDurableTask(second, { taskId: record.task_id, lastSequence: last, timeoutMs: 5000 });
        expect(rest.map((s) => s.message.sequence)).toEqual(Array.from({ length: 6 - last }, (_, i) => last + 1 + i));
        expect(rest.at(-1)?.message.type).toBe('task.result');
      } finally {
        await second.close();
      }
    });

    it('numbers a redelivered task on from the last stored sequence, with the attempt in Tap-Attempt', async () => {
      const lost = await connect({ servers: server.url });
      let started!: () => void;
      const holding = new Promise<void>((r) => (started = r));
      await startDurableRunner({
        nc: lost,
        agentId: AGENT,
        capability: 'work.vanish',
        leaseMs: 300,
        handler: async ({ emit }) => {
          await emit('first attempt');
          started();
          await new Promise(() => {});
        },
      });
      const { record } = await submitDurable(nc, { next_phase: 'work.vanish', input: null });
      await holding;
      await lost.close();
      await runner({ capability: 'work.vanish', handler: async ({ attempts }) => ({ attempts }) });
      const all = await replayDurableTask(nc, { taskId: record.task_id, timeoutMs: 5000 });
      expect(all.map((s) => [s.message.sequence, s.attempt, s.message.type])).toEqual([
        [1, 0, 'task.event'],
        [2, 0, 'task.event'],
        [3, 1, 'task.event'],
        [4, 1, 'task.result'],
      ]);
      expect(all.at(-1)?.message.payload.output).toEqual({ attempts: 1 });
    });

    it('hands a retryable failure back to the server, and dead-letters the record after max_deliver with MAX_ATTEMPTS', async () => {
      const r = await runner({ capability: 'tap.test.fail', maxAttempts: 3 });
      const { record } = await submitDurable(nc, { next_phase: 'tap.test.fail', input: { code: 'BUSY', retryable: true } });
      const jsm = await jetstreamManager(nc);
      const dead = (
        await stored(() => jsm.streams.getMessage(DEFAULT_NAMES.dead, { last_by_subj: deadSubject(DEFAULT_NAMES, 'tap.test.fail') }))
      ).json<TaskRecord>();
      expect(dead.task_id).toBe(record.task_id);
      expect(dead.state).toMatchObject({ status: 'failed', attempts: 3, last_error: { code: 'MAX_ATTEMPTS' } });
      const all = await replayDurableTask(nc, { taskId: record.task_id, untilResult: false });
      expect(all.filter((s) => s.message.payload.kind === 'state').map((s) => s.attempt)).toEqual([0, 1, 2]);
      expect(all.some((s) => s.message.type === 'task.result')).toBe(false);
      expect(r.stats).toMatchObject({ retried: 3, deadLetters: 1, completed: 0 });
    });

    it('finishes a non-retryable failure at once: a failed task.result and record, attempts 0', async () => {
      await runner({ capability: 'tap.test.fail' });
      const { record } = await submitDurable(nc, { next_phase: 'tap.test.fail', input: { code: 'INVALID_INPUT', retryable: false } });
      const done = await resultOf(record.task_id);
      expect(done.state).toMatchObject({ status: 'failed', attempts: 0, last_error: { code: 'INVALID_INPUT' } });
      const all = await replayDurableTask(nc, { taskId: record.task_id, untilResult: false });
      expect(all.at(-1)?.message.payload).toMatchObject({ status: 'failed', error: { code: 'INVALID_INPUT', retryable: false } });
    });
  },
);
