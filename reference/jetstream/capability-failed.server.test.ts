/**
 * The capability's own failure on the durable queue (spec: bindings-nats#durable-1-1): a
 * record of TAP 1.1 finishes CAPABILITY_FAILED, one of 1.0 INTERNAL_ERROR with the capability's
 * retryable value, and a failure the capability reports transient is delivered again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { CapabilityError } from '../agent/handler.ts';
import type { TaskRecord } from '../workspace/record.ts';
import { NO_NATS_SERVER, natsServerInstalled, startNatsServer, type NatsServer } from '../transports/nats/nats-server.testkit.ts';
import { durableConformanceHandlers } from './capabilities.ts';
import { replayDurableTask } from './events.ts';
import { startDurableRunner } from './runner.ts';
import { DEFAULT_NAMES as N, ensureStreams, resultSubject } from './streams.ts';
import { submitDurable } from './submit.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const AGENT = 'tap.capability-failed-test';

describe.skipIf(lacks('nats-server'))(needing('nats-server', "a durable runner and the capability's own failure"), () => {
  let server: NatsServer;
  let nc: NatsConnection;
  const stops: Array<() => Promise<unknown>> = [];
  let transientCalls = 0;

  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
    await ensureStreams(nc);
    const fail = durableConformanceHandlers()['tap.test.fail']!;
    for (const [capability, handler] of [
      ['tap.test.fail', fail],
      [
        'work.transient',
        async () => {
          transientCalls++;
          // The service the capability calls is down on the first attempt only.
          if (transientCalls === 1) throw new CapabilityError('the service was unavailable', { retryable: true });
          return { ok: true };
        },
      ],
    ] as const) {
      const r = await startDurableRunner({ nc, agentId: AGENT, capability, handler, leaseMs: 2000, maxAttempts: 3 });
      stops.push(() => r.stop());
    }
  });
  afterAll(async () => {
    for (const s of stops.splice(0)) await s().catch(() => {});
    await nc?.close();
    await server?.stop();
  });

  async function finishedRecord(taskId: string): Promise<TaskRecord> {
    const jsm = await jetstreamManager(nc);
    const deadline = Date.now() + 8000;
    for (;;) {
      const m = await jsm.streams.getMessage(N.results, { last_by_subj: resultSubject(N, taskId) }).catch(() => null);
      if (m) return m.json<TaskRecord>();
      if (Date.now() > deadline) throw new Error(`no finished record of ${taskId} within 8 s`);
      await sleep(25);
    }
  }

  async function run(protocol: string, input: unknown, capability = 'tap.test.fail') {
    const { record } = await submitDurable(nc, { protocol, next_phase: capability, input } as never);
    const done = await finishedRecord(record.task_id);
    const stream = await replayDurableTask(nc, { taskId: record.task_id });
    return { done, result: stream.at(-1)!.message };
  }

  it('finishes a record of 1.1 whose capability failed with CAPABILITY_FAILED, not retryable, in a stream of tap/1.1', async () => {
    const { done, result } = await run('tap/1.1', { code: 'CAPABILITY_FAILED', message: 'no such repository' });
    expect(done.state.status).toBe('failed');
    expect(done.state.last_error?.code).toBe('CAPABILITY_FAILED');
    expect(result.type).toBe('task.result');
    expect(result.protocol).toBe('tap/1.1');
    expect(result.payload).toMatchObject({
      status: 'failed',
      error: { code: 'CAPABILITY_FAILED', retryable: false, message: 'no such repository' },
    });
  });

  it('finishes a record of 1.0 whose capability failed with INTERNAL_ERROR carrying retryable false, in a stream of tap/1.0', async () => {
    const { done, result } = await run('tap/1.0', { code: 'CAPABILITY_FAILED', message: 'the test failed' });
    expect(done.state.last_error?.code).toBe('INTERNAL_ERROR');
    expect(result.protocol).toBe('tap/1.0');
    expect(result.payload).toMatchObject({ status: 'failed', error: { code: 'INTERNAL_ERROR', retryable: false } });
  });

  it('delivers again a phase whose capability reported a transient failure, and finishes it on the next delivery', async () => {
    const { done, result } = await run('tap/1.1', null, 'work.transient');
    expect(transientCalls).toBe(2);
    expect(done.state).toMatchObject({ status: 'completed', attempts: 1 });
    expect(result.payload).toMatchObject({ status: 'completed', output: { ok: true } });
  });
});
