/**
 * A delivery that stored its task.result in TAP_EVENTS but not its finished record in TAP_RESULTS
 * (its runner or server was lost in between) is redelivered: the redelivery stores the finished
 * record from that result without running the phase again or adding to the task's stream
 * (spec: bindings-nats#event-streams, TAP-NATS-035). The first delivery's handler deletes
 * TAP_RESULTS, so that its finished record cannot be stored; the test creates the stream again.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { JetStreamManager } from '@nats-io/jetstream';
import { TapError } from '../core/errors.ts';
import { checkHistory } from '../core/history.ts';
import type { TaskRecord } from '../workspace/record.ts';
import { NO_NATS_SERVER, natsServerInstalled, startNatsServer, type NatsServer } from '../transports/nats/nats-server.testkit.ts';
import { replayDurableTask } from './events.ts';
import { startDurableRunner, type DurableRunner, type DurableWork } from './runner.ts';
import { DEFAULT_NAMES, ensureStreams, resultSubject } from './streams.ts';
import { submitDurable } from './submit.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

const AGENT = 'tap.recovery-test';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe.skipIf(lacks('nats-server'))(
  needing('nats-server', 'a redelivery after the task.result was stored (spec: bindings-nats#event-streams)'),
  () => {
    let server: NatsServer;
    let nc: NatsConnection;
    let jsm: JetStreamManager;
    let runner: DurableRunner | undefined;

    beforeAll(async () => {
      server = await startNatsServer();
      nc = await connect({ servers: server.url });
      ({ jsm } = await ensureStreams(nc));
    });
    afterEach(async () => {
      await runner?.stop();
      runner = undefined;
    });
    afterAll(async () => {
      await nc?.close();
      await server?.stop();
    });

    /** Polls until `probe` yields a value, failing after `ms`. */
    async function until<T>(what: string, probe: () => Promise<T | null | undefined>, ms = 8000): Promise<T> {
      const deadline = Date.now() + ms;
      while (Date.now() < deadline) {
        const value = await probe();
        if (value !== null && value !== undefined) return value;
        await sleep(25);
      }
      throw new Error(`${what} did not happen within ${ms} ms`);
    }

    /**
     * Runs one task whose first delivery ends with its task.result stored and no finished record,
     * then lets the redelivery finish it; resolves with the attempts the handler ran, the task's
     * stream and its finished record.
     */
    async function runAcrossLostRecord(capability: string, phase: (work: DurableWork) => Promise<unknown>) {
      const ran: number[] = [];
      const errors: string[] = [];
      runner = await startDurableRunner({
        nc,
        agentId: AGENT,
        capability,
        leaseMs: 300,
        logger: (level, message) => {
          if (level === 'error') errors.push(message);
        },
        handler: async (work) => {
          ran.push(work.attempts);
          // The finished record of this delivery has nowhere to go: its publish to TAP_RESULTS fails.
          if (work.attempts === 0) await jsm.streams.delete(DEFAULT_NAMES.results);
          return phase(work);
        },
      });
      const { record } = await submitDurable(nc, { next_phase: capability, input: { n: 7 } });
      await until('the failed publish of the finished record', async () => (errors.length > 0 ? true : null));
      const stored = await replayDurableTask(nc, { taskId: record.task_id, timeoutMs: 2000 });
      expect(stored.at(-1)?.message.type).toBe('task.result');
      await ensureStreams(nc);
      const done = await until('the finished record', () =>
        jsm.streams
          .getMessage(DEFAULT_NAMES.results, { last_by_subj: resultSubject(DEFAULT_NAMES, record.task_id) })
          .then((m) => m?.json<TaskRecord>())
          .catch(() => null),
      );
      // Outlive another lease: a delivery still outstanding would be redelivered and run again.
      await sleep(700);
      const stream = await replayDurableTask(nc, { taskId: record.task_id, timeoutMs: 2000 });
      return { ran, stream, done, stats: runner.stats };
    }

    it('stores the completed record from the stored task.result and never runs the phase again', async () => {
      const { ran, stream, done, stats } = await runAcrossLostRecord('work.recover-ok', async ({ record }) => ({
        echoed: record.context.current_input,
      }));
      expect(ran).toEqual([0]);
      expect(stream.map((s) => [s.message.type, s.message.sequence, s.attempt])).toEqual([
        ['task.event', 1, 0],
        ['task.result', 2, 0],
      ]);
      expect(
        checkHistory(
          stream.map((s) => s.message),
          undefined,
          { complete: true, durable: true },
        ),
      ).toEqual([]);
      expect(done.state).toMatchObject({ status: 'completed', attempts: 0, processed_by: AGENT, last_error: null });
      expect(done.context.history.at(-1)?.output).toEqual({ echoed: { n: 7 } });
      expect(stats).toMatchObject({ completed: 1, failed: 0 });
    });

    it('stores the failed record, with the error of the stored task.result, and never runs the phase again', async () => {
      const { ran, stream, done } = await runAcrossLostRecord('work.recover-failed', async () => {
        throw new TapError('PERMISSION_DENIED', 'the phase may not write to that workspace');
      });
      expect(ran).toEqual([0]);
      expect(stream.map((s) => s.message.type)).toEqual(['task.event', 'task.result']);
      expect(stream[1]?.message.payload).toMatchObject({ status: 'failed', error: { code: 'PERMISSION_DENIED' } });
      expect(done.state).toMatchObject({ status: 'failed', attempts: 0, last_error: { code: 'PERMISSION_DENIED' } });
    });
  },
);
