/**
 * Durable tasks on a three-node cluster with replicated streams (spec: bindings-nats#task-queue):
 * four runners on different nodes work through the queue while one server is killed with
 * SIGKILL and one runner's process vanishes; afterwards every accepted task has exactly one
 * finished record, every completed one applied its effect, and no effect happened twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { TaskRecord } from '../workspace/record.ts';
import { NO_NATS_SERVER, natsServerInstalled, startNatsCluster, type NatsCluster } from '../transports/nats/test-server.ts';
import { startDurableRunner, type DurableRunner } from './runner.ts';
import { DEFAULT_NAMES, ensureStreams } from './streams.ts';
import { submitDurable } from './submit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const TASKS = 200;

/** Retries an operation while the cluster elects new leaders after the loss of a node. */
async function retried<T>(what: () => Promise<T>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await what();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(200);
    }
  }
}

describe.skipIf(!natsServerInstalled)('durable tasks on a three-node cluster', () => {
  let cluster: NatsCluster;
  const conns: NatsConnection[] = [];

  beforeAll(async () => {
    cluster = await startNatsCluster(3);
  }, 30_000);
  afterAll(async () => {
    for (const c of conns) await c.close().catch(() => {});
    await cluster?.stop();
  });

  it('loses no accepted task and repeats no effect when a server and a runner die mid-run', { timeout: 60_000 }, async () => {
    const urls = cluster.servers.map((s) => s.url);
    // Every client lists the whole cluster, starting with a different node.
    const client = async (first: number): Promise<NatsConnection> => {
      const nc = await connect({
        servers: [...urls.slice(first), ...urls.slice(0, first)],
        maxReconnectAttempts: -1,
        reconnectTimeWait: 100,
      });
      conns.push(nc);
      return nc;
    };
    const admin = await client(0);
    // The meta leader may take a moment after the cluster forms.
    let effects: KV | undefined;
    for (let i = 0; i < 100 && !effects; i++) {
      try {
        await ensureStreams(admin, { replicas: 3 });
        effects = await new Kvm(admin).create('TAP_TEST_EFFECTS', { replicas: 3 });
      } catch {
        await sleep(100);
      }
    }
    expect(effects).toBeDefined();
    const handler = (nc: NatsConnection) => {
      const kv = new Kvm(nc).open('TAP_TEST_EFFECTS');
      // The effect: one counter key per task, written at most once (the tap.test.counter model).
      return async ({ record }: { record: TaskRecord }) => {
        const bucket = await kv;
        await sleep(5);
        // A create that fails while the cluster elects a leader is retried; one that finds the key means it was applied.
        return retried(async () => {
          try {
            await bucket.create(`effect.${record.task_id}`, '1');
            return { effect: 'applied' };
          } catch (err) {
            if ((await bucket.get(`effect.${record.task_id}`))?.string() === '1') return { effect: 'already applied' };
            throw err;
          }
        }, 20_000);
      };
    };
    const runners: DurableRunner[] = [];
    const victimConn = await client(1);
    for (const [i, nc] of [victimConn, await client(1), await client(2), await client(2)].entries()) {
      runners.push(
        await startDurableRunner({
          nc,
          agentId: `tap.cluster-${i}`,
          capability: 'work.count',
          leaseMs: 1000,
          maxAttempts: 50,
          replicas: 3,
          handler: handler(nc),
        }),
      );
    }
    const submitter = await client(2);
    const accepted: string[] = [];
    const refused: string[] = [];
    for (let i = 0; i < TASKS; i++) {
      // A submit is retried with the same task id, hence the same Nats-Msg-Id: the server keeps one copy.
      const draft = { task_id: `task-20260101-${i.toString(16).padStart(12, '0')}`, next_phase: 'work.count', input: { i } };
      try {
        accepted.push((await retried(() => submitDurable(submitter, draft), 30_000)).record.task_id);
      } catch (err) {
        refused.push(`${draft.task_id}: ${(err as Error).message}`);
      }
      if (i === Math.floor(TASKS / 3)) {
        await cluster.servers[0]!.kill('SIGKILL');
        // One runner's process goes too: its deliveries come back after their lease.
        await victimConn.close();
      }
    }
    expect(refused).toEqual([]);
    const jsm = await retried(() => jetstreamManager(submitter));
    const results = () => retried(() => jsm.streams.info(DEFAULT_NAMES.results, { subjects_filter: 'tap.results.>' }));
    const deadline = Date.now() + 40_000;
    let info = await results();
    while (Object.keys(info.state.subjects ?? {}).length < accepted.length && Date.now() < deadline) {
      await sleep(200);
      info = await results();
    }
    const perTask = info.state.subjects ?? {};
    const missing = accepted.filter((id) => perTask[`tap.results.${id}`] === undefined);
    expect(missing).toEqual([]);
    expect(Object.entries(perTask).filter(([, n]) => n !== 1)).toEqual([]);
    // Every effect key was written once: its bucket holds one value per key, no later revision.
    const effectsInfo = await retried(() => jsm.streams.info('KV_TAP_TEST_EFFECTS', { subjects_filter: '$KV.TAP_TEST_EFFECTS.>' }));
    const writes = effectsInfo.state.subjects ?? {};
    // A completed task applied its effect; a task may instead have failed (its effect timed out while the
    // cluster elected leaders), which is one result too, and then it has no effect or one.
    const completedWithoutEffect: string[] = [];
    for (const id of accepted.filter((x) => writes[`$KV.TAP_TEST_EFFECTS.effect.${x}`] === undefined)) {
      const m = await retried(() => jsm.streams.getMessage(DEFAULT_NAMES.results, { last_by_subj: `tap.results.${id}` }));
      if (m?.json<TaskRecord>().state.status === 'completed') completedWithoutEffect.push(id);
    }
    expect(completedWithoutEffect).toEqual([]);
    expect(Object.entries(writes).filter(([, n]) => n !== 1)).toEqual([]);
    await Promise.all(runners.slice(1).map((r) => r.stop()));
  });
});
