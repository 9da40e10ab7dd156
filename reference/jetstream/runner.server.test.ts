import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { validateAgainst } from '../core/validate.ts';
import type { TaskRecord } from '../workspace/record.ts';
import { NO_NATS_SERVER, natsServerInstalled, startNatsServer, type NatsServer } from '../transports/nats/nats-server.testkit.ts';
import { startDurableRunner, type DurableRunner, type DurableRunnerOptions } from './runner.ts';
import { DEFAULT_NAMES, deadSubject, ensureStreams, resultSubject } from './streams.ts';
import { submitDurable } from './submit.ts';
import { crashWhileHolding, strayPull } from './crash.testkit.ts';
import { consumerName, consumerSettled } from './consumer.ts';
import { maxDeliveriesAdvisory } from '../transports/nats/subjects.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';
import type { AuditEntry } from '../ops/audit.ts';
import { parseExposition, sampleValue } from '../ops/exposition-parse.ts';
import { renderExposition } from '../ops/prometheus.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'the durable runner on JetStream (spec: bindings-nats#task-queue)'), () => {
  let server: NatsServer;
  let nc: NatsConnection;
  const stops: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
    // A short de-duplication window, so that a test can outlive it.
    await ensureStreams(nc, { duplicateWindowMs: 1000 });
  });
  afterEach(async () => {
    for (const s of stops.splice(0).reverse()) await s().catch(() => {});
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  async function runner(
    o: Partial<DurableRunnerOptions> & Pick<DurableRunnerOptions, 'capability' | 'handler'>,
    conn = nc,
  ): Promise<DurableRunner> {
    const r = await startDurableRunner({ nc: conn, agentId: 'tap.durable-test', leaseMs: 300, ...o });
    stops.push(() => r.stop());
    return r;
  }

  /** The finished record of a task in TAP_RESULTS, once there. */
  async function resultOf(taskId: string, ms = 5000): Promise<TaskRecord> {
    const jsm = await jetstreamManager(nc);
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      const m = await jsm.streams
        .getMessage(DEFAULT_NAMES.results, { last_by_subj: resultSubject(DEFAULT_NAMES, taskId) })
        .catch(() => null);
      if (m) return m.json<TaskRecord>();
      await sleep(25);
    }
    throw new Error(`no result for ${taskId} within ${ms} ms`);
  }

  /** The consumer of a capability and its queue on the server, in one line: for a failure's message. */
  async function serverState(capability: string): Promise<string> {
    const jsm = await jetstreamManager(nc);
    const c = await jsm.consumers.info(DEFAULT_NAMES.tasks, consumerName(capability)).catch((err: Error) => err.message);
    const held =
      typeof c === 'string'
        ? c
        : `consumer created ${c.created}, delivered ${c.delivered.consumer_seq}, ack floor ${c.ack_floor.consumer_seq}, ` +
          `${c.num_ack_pending} pending, ${c.num_redelivered} redelivered, ack_wait ${c.config.ack_wait} ns`;
    return `${held}; ${await queued(capability)} record(s) queued`;
  }

  async function queued(capability: string): Promise<number> {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(DEFAULT_NAMES.tasks, { subjects_filter: `tap.tasks.${capability}` });
    return info.state.subjects?.[`tap.tasks.${capability}`] ?? 0;
  }

  it("with telemetry, a delivery is a consumer span under the record's traceparent, with its task, attempt and outcome", async () => {
    const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
    const exporter = new InMemorySpanExporter();
    const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('test');
    await runner({ capability: 'work.traced', handler: async (w) => w.record.context.current_input, telemetry: { tracer } });
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const { record } = await submitDurable(nc, { next_phase: 'work.traced', input: 7, metadata: { traceparent } });
    await resultOf(record.task_id);
    const span = exporter.getFinishedSpans().find((s) => s.name === 'process work.traced')!;
    expect(span.spanContext().traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(span.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
    expect(span.attributes).toMatchObject({
      'tap.task_id': record.task_id,
      'tap.attempt': 1,
      'tap.agent': 'tap.durable-test',
      'tap.outcome': 'completed',
    });
  });

  it('runs a queued record and publishes the finished record, valid against task-record.schema.json, before acknowledging; audits and counts it', async () => {
    const audited: AuditEntry[] = [];
    const r = await runner({
      capability: 'work.echo',
      handler: async ({ record }) => ({ echoed: record.context.current_input }),
      audit: { append: (e) => audited.push(e) },
    });
    const { record } = await submitDurable(nc, { next_phase: 'work.echo', input: { n: 1 } });
    const done = await resultOf(record.task_id);
    expect(validateAgainst('task-record.schema.json', done)).toBeNull();
    expect(done.state).toMatchObject({ status: 'completed', attempts: 0, processed_by: 'tap.durable-test' });
    expect(done.context.history.at(-1)?.output).toEqual({ echoed: { n: 1 } });
    await sleep(100);
    expect(await queued('work.echo')).toBe(0);
    expect(audited).toEqual([
      expect.objectContaining({
        via: 'durable',
        agent: 'tap.durable-test',
        task_id: record.task_id,
        capability: 'work.echo',
        outcome: 'completed',
        attempt: 1,
      }),
    ]);
    const families = parseExposition(renderExposition(await r.metrics()));
    expect(sampleValue(families, 'tap_durable_tasks_finished_total', { capability: 'work.echo', outcome: 'completed' })).toBe(1);
    expect(sampleValue(families, 'tap_durable_task_duration_seconds_count', { capability: 'work.echo' })).toBe(1);
    expect(families.get('tap_durable_queue_pending')?.samples).toEqual([
      { name: 'tap_durable_queue_pending', labels: { capability: 'work.echo' }, value: 0 },
    ]);
  });

  it('renews the lease while a phase runs longer than ack_wait: the record is delivered once', async () => {
    const attempts: number[] = [];
    // A lease of 1 s renewed every third of it: a renewal may come 600 ms late on a loaded machine
    // (a 300 ms lease once missed by one under a full test run beside other work) and still hold.
    const r = await runner({
      capability: 'work.slow',
      leaseMs: 1000,
      handler: async ({ attempts: a }) => {
        attempts.push(a);
        await sleep(3600);
        return 'slow';
      },
    });
    const { record } = await submitDurable(nc, { next_phase: 'work.slow', input: null });
    expect((await resultOf(record.task_id, 10_000)).state.status).toBe('completed');
    expect(attempts).toEqual([0]);
    expect(r.stats.renewals).toBeGreaterThanOrEqual(3);
  });

  it('redelivers the record of a runner that vanished, with the attempt number from the delivery count', async () => {
    const lost = await connect({ servers: server.url });
    let release!: () => void;
    const hung = new Promise<void>((r) => (release = r));
    let first: Promise<DurableRunner> | undefined;
    const started = new Promise<void>((resolve) => {
      first = runner(
        {
          capability: 'work.crash',
          handler: async () => {
            resolve();
            await hung;
          },
        },
        lost,
      );
    });
    const { record } = await submitDurable(nc, { next_phase: 'work.crash', input: 'once' });
    await started;
    // The process dies: its connection goes, and with it the renewals.
    await lost.close();
    stops.splice(0);
    const seen: number[] = [];
    const second = await runner({
      capability: 'work.crash',
      handler: async ({ attempts, record: r }) => {
        seen.push(attempts);
        return r.state.attempts;
      },
    });
    const done = await resultOf(record.task_id);
    release();
    // Seen once (in a loaded fresh clone) as [0]: a first delivery. What the server held then tells why.
    const stats = async () =>
      `; the lost runner's stats ${JSON.stringify((await first!).stats)}, the second's ${JSON.stringify(second.stats)}`;
    const why = seen.length === 1 && seen[0] === 1 ? '' : `${await serverState('work.crash')}${await stats()}`;
    expect(seen, why).toEqual([1]);
    expect(done.state.attempts).toBe(1);
    expect(done.context.history.at(-1)?.output).toBe(1);
  });

  it('moves a record that ran out of deliveries to TAP_DEAD with MAX_ATTEMPTS and off the queue, though no runner was connected when its advisory came (bindings-nats#dead-letters)', async () => {
    const submitted = submitDurable(nc, { next_phase: 'work.poison', input: 'poison' });
    // Two processes crash on the record in turn. A pull the server still holds has it try the record
    // again as the lease runs out, find its deliveries spent and publish the advisory, with no
    // runner of the capability connected.
    const crash = { capability: 'work.poison', leaseMs: 300, maxAttempts: 2, agentId: 'tap.durable-crash' };
    await crashWhileHolding(server.url, crash);
    await crashWhileHolding(server.url, crash);
    const stray = strayPull(nc, 'work.poison', 2000);
    const { record } = await submitted;
    const jsm = await jetstreamManager(nc);
    const advisorySubject = maxDeliveriesAdvisory(DEFAULT_NAMES.tasks, consumerName('work.poison'));
    const kept = async () =>
      (await jsm.streams.info(DEFAULT_NAMES.advisories, { subjects_filter: advisorySubject })).state.subjects?.[advisorySubject] ?? 0;
    // TAP_ADVISORIES keeps the advisory nobody heard.
    await vi.waitFor(async () => expect(await kept()).toBe(1), { timeout: 10_000, interval: 50 });
    expect(await queued('work.poison')).toBe(1);
    await stray;
    // A runner started afterwards answers it. A crashed runner's pull may hold the advisory for the
    // advisory consumer's ack_wait (5 s) before the server gives it to this one.
    const watcher = await runner({ capability: 'work.poison', maxAttempts: 2, handler: async () => 'never delivered' });
    let dead: TaskRecord | undefined;
    await vi.waitFor(
      async () => {
        const m = await jsm.streams.getMessage(DEFAULT_NAMES.dead, { last_by_subj: deadSubject(DEFAULT_NAMES, 'work.poison') });
        dead = m?.json<TaskRecord>();
        expect(dead).toBeDefined();
      },
      { timeout: 20_000, interval: 50 },
    );
    expect(dead?.task_id).toBe(record.task_id);
    expect(dead?.state.last_error?.code).toBe('MAX_ATTEMPTS');
    expect(dead?.state.attempts).toBe(2);
    // The watcher stores the dead letter, deletes the record from the queue, counts it, then
    // acknowledges the advisory, which leaves TAP_ADVISORIES.
    await vi.waitFor(async () => {
      expect(watcher.stats).toMatchObject({ completed: 0, deadLetters: 1 });
      expect(await queued('work.poison')).toBe(0);
      expect(await kept()).toBe(0);
    }, 5000);
  });

  it('pulls no more deliveries than it has places for: with a backlog of tasks longer than the lease, each runs once', async () => {
    const runs: string[] = [];
    const r = await runner({
      capability: 'work.backlog',
      leaseMs: 1000,
      maxAttempts: 5,
      concurrency: 2,
      handler: async ({ record, attempts }) => {
        runs.push(`${record.task_id}@${attempts}`);
        await sleep(2500);
        return 'done';
      },
    });
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await submitDurable(nc, { next_phase: 'work.backlog', input: i })).record.task_id);
    // Three rounds of two: a delivery held in the client's buffer past its lease would run again.
    await vi.waitFor(() => expect(r.stats.completed).toBe(6), { timeout: 30_000, interval: 100 });
    expect(runs.sort()).toEqual(ids.map((id) => `${id}@0`).sort());
    expect(r.stats).toMatchObject({ redelivered: 0, fenced: 0 });
  });

  it('runs a task with an idempotency key once: the server drops a repeat within its window, the bucket past it (bindings-nats#idempotency)', async () => {
    const runs: string[] = [];
    const r = await runner({
      capability: 'work.once',
      handler: async ({ record }) => {
        runs.push(record.task_id);
        return 'effect';
      },
    });
    const idempotency = { principal: 'alice', key: 'order-7' };
    const first = await submitDurable(nc, { next_phase: 'work.once', input: 1 }, { idempotency });
    const within = await submitDurable(nc, { next_phase: 'work.once', input: 1 }, { idempotency });
    expect(within.duplicate).toBe(true);
    await resultOf(first.record.task_id);
    await sleep(1100);
    const past = await submitDurable(nc, { next_phase: 'work.once', input: 1 }, { idempotency });
    expect(past.duplicate).toBe(false);
    const deadline = Date.now() + 5000;
    while (r.stats.repeats === 0 && Date.now() < deadline) await sleep(25);
    expect(r.stats.repeats).toBe(1);
    expect(runs).toEqual([first.record.task_id]);
  });

  it('sets a consumer an earlier runner left with a shorter lease to its own, says so, and runs a long phase once', async () => {
    const first = await runner({ capability: 'work.relet', leaseMs: 300, handler: async () => 'first' });
    await first.stop();
    const said: string[] = [];
    const attempts: number[] = [];
    await runner({
      capability: 'work.relet',
      leaseMs: 1500,
      logger: (level, message) => said.push(`${level}: ${message}`),
      handler: async ({ attempts: a }) => {
        attempts.push(a);
        await sleep(1000);
        return 'slow';
      },
    });
    expect(said).toEqual([
      "warn: consumer tap-work_relet of TAP_TASKS had ack_wait 300 ms and max_deliver 5 (left by an earlier runner); set to this runner's lease of 1500 ms and 5 deliveries",
    ]);
    const info = await (await jetstreamManager(nc)).consumers.info(DEFAULT_NAMES.tasks, 'tap-work_relet');
    expect(info.config.ack_wait).toBe(1500 * 1_000_000);
    // At the old 300 ms the server would redeliver long before the phase ends: renewing every 500 ms is not enough.
    const { record } = await submitDurable(nc, { next_phase: 'work.relet', input: null });
    expect((await resultOf(record.task_id)).state.attempts).toBe(0);
    expect(attempts).toEqual([0]);
  });

  /** A consumer of TAP_TASKS made by hand, as someone else's program would. */
  async function ownConsumer(name: string, subject: string): Promise<JetStreamManager> {
    const jsm = await jetstreamManager(nc);
    await jsm.consumers.add(DEFAULT_NAMES.tasks, { durable_name: name, ack_policy: AckPolicy.Explicit, filter_subject: subject });
    return jsm;
  }

  it('names the consumer in the way when the work queue already gives the subject to another', async () => {
    await ownConsumer('someone-else', 'tap.tasks.work.taken');
    await expect(runner({ capability: 'work.taken', handler: async () => null })).rejects.toThrow(
      /^cannot create consumer tap-work_taken of TAP_TASKS for tap\.tasks\.work\.taken: .*\. Consumer someone-else already takes it; if no runner serves it any more, delete it \(tapctl nats remove-consumer someone-else\)$/,
    );
  });

  it('waits for its consumer to settle before it pulls: one with a leader at once, one that never settles no longer than asked', async () => {
    const jsm = await ownConsumer('settle-probe', 'tap.tasks.work.settle');
    expect(await consumerSettled(jsm, DEFAULT_NAMES.tasks, 'settle-probe', 2000)).toBe(true);
    const t0 = Date.now();
    expect(await consumerSettled(jsm, DEFAULT_NAMES.tasks, 'no-such-consumer', 300)).toBe(false);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
    expect(Date.now() - t0).toBeLessThan(5000);
  });
});
