/**
 * Durable tasks on a three-node cluster with replicated (R3) streams (spec: bindings-nats#task-queue):
 * four agent processes (the runner from dist/) serve `tap.test.counter` while 1,000 tasks go through the queue; one server
 * is killed with SIGKILL mid-run and one agent process too. Afterwards every accepted task has
 * exactly one finished record, no counter key has more than one effect, and the streams of
 * TAP_EVENTS pass the history checker.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { checkHistory } from '../core/history.ts';
import type { TaskRecord } from '../workspace/record.ts';
import {
  NO_NATS_SERVER,
  natsServerInstalled,
  startNatsCluster,
  type NatsCluster,
  whileElecting,
} from '../transports/nats/nats-server.testkit.ts';
import { DEFAULT_NAMES, ensureStreams } from './streams.ts';
import { submitDurable } from './submit.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';
import { replicaProblems, STREAMS } from '../../conformance/cases/nats-durable/kit.ts';
import { clusterSize } from '../transports/nats/replicas.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);
const AGENT = fileURLToPath(new URL('../../fixtures/agents/nats/durable-counter.mjs', import.meta.url));
/** The agent's counters: one bucket key per counter key, its value the count and the task that produced each. */
const COUNTER_BUCKET = 'TAP_TEST_COUNTER';
const counterKey = (key: string): string => `count.${Buffer.from(key).toString('base64url') || '_'}`;
interface CounterValue {
  count: number;
  by: Record<string, number>;
}
const TASKS = 1000;
const LEASE_MS = 1000;
/** How many tasks the victim applies before it holds the rest it takes. */
const VICTIM_APPLIES = 20;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** An agent process of the durable runner, and when it holds its deliveries (with `holdAfter`: see the fixture). */
interface Agent {
  child: ChildProcess;
  holding: Promise<void>;
}

/** Starts an agent process running the durable runner; resolves once it consumes. */
function startAgent(servers: string[], agentId: string, log: string[], holdAfter?: number): Promise<Agent> {
  const args = [AGENT, servers.join(','), agentId, String(LEASE_MS), ...(holdAfter === undefined ? [] : [String(holdAfter)])];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (t: string) => log.push(t));
  const lines = createInterface({ input: child.stdout! });
  const holding = new Promise<void>((resolve) => lines.on('line', (line) => line === 'holding' && resolve()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${agentId} did not start within 20 s:\n${log.join('')}`)), 20_000);
    lines.once('line', (line) => {
      clearTimeout(timer);
      if (line === 'ready') resolve({ child, holding });
      else reject(new Error(`${agentId} said ${line}`));
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${agentId} exited (${code ?? signal}) before it was ready:\n${log.join('')}`));
    });
  });
}

/**
 * Every message of a stream, oldest first, each read from the stream's leader by its sequence.
 * Not with a consumer: after the loss of a node the server may place a new consumer on the dead
 * peer, and its creation then times out until the cluster counts that peer gone.
 */
async function allMessages(jsm: JetStreamManager, stream: string): Promise<Array<{ subject: string; body: unknown }>> {
  const { first_seq: first, last_seq: last } = (await whileElecting(() => jsm.streams.info(stream))).state;
  const out: Array<{ subject: string; body: unknown }> = [];
  for (let seq = first; seq <= last && last > 0; seq += 64) {
    const batch = Array.from({ length: Math.min(64, last - seq + 1) }, (_, k) => seq + k);
    const got = await Promise.all(batch.map((n) => whileElecting(() => jsm.streams.getMessage(stream, { seq: n }))));
    for (const m of got) if (m) out.push({ subject: m.subject, body: m.json() });
  }
  return out;
}

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'durable tasks on a three-node cluster with four agent processes'), () => {
  let cluster: NatsCluster | undefined;
  const agents: ChildProcess[] = [];
  const conns: NatsConnection[] = [];
  const logs: string[] = [];
  beforeAll(async () => {
    cluster = await startNatsCluster(3);
  }, 30_000);
  afterAll(async () => {
    // Every process and server goes, whatever the test did.
    for (const a of agents) if (a.exitCode === null && a.signalCode === null) a.kill('SIGKILL');
    for (const c of conns) await c.close().catch(() => {});
    await cluster?.stop();
  });

  it('gives every accepted task one result and one effect when a server and an agent process die mid-run', {
    timeout: 90_000,
  }, async () => {
    // On a failure the agents' logs are kept for reading, their path and last lines printed.
    onTestFailed(() => {
      const file = join(mkdtempSync(join(tmpdir(), 'tap-cluster-')), 'agents.log');
      writeFileSync(file, logs.join(''));
      console.error(`the agents' logs: ${file}\n${logs.join('').split('\n').slice(-40).join('\n')}`);
    });
    const urls = cluster!.servers.map((s) => s.url);
    // Every client lists the whole cluster, starting with a different node.
    const rotated = (first: number): string[] => [...urls.slice(first), ...urls.slice(0, first)];
    const client = async (first: number): Promise<NatsConnection> => {
      const nc = await connect({ servers: rotated(first), maxReconnectAttempts: -1, reconnectTimeWait: 100 });
      conns.push(nc);
      return nc;
    };
    const admin = await client(1);
    // The meta leader may take a moment after the cluster forms.
    await whileElecting(async () => {
      // No replicas option: three, read from the cluster's size (TAP-NATS-070).
      await ensureStreams(admin);
      await new Kvm(admin).create(COUNTER_BUCKET, { replicas: 3 });
    });
    const created = await Promise.all(
      [...STREAMS.map((x) => x.name), `KV_${DEFAULT_NAMES.idempotency}`].map(async (name) => ({
        name,
        replicas: (await (await jetstreamManager(admin)).streams.info(name)).config.num_replicas,
      })),
    );
    expect(replicaProblems(clusterSize(admin), created)).toEqual([]);
    // The first agent process (the victim) prefers the server that dies; the others spread over the rest.
    // The victim applies a few tasks and then holds what it takes, so that it surely dies holding deliveries.
    const started = await Promise.all(
      [0, 1, 2, 1].map((first, i) => startAgent(rotated(first), `tap.cluster-${i}`, logs, i === 0 ? VICTIM_APPLIES : undefined)),
    );
    agents.push(...started.map((a) => a.child));

    const submitter = await client(2);
    const jsm: JetStreamManager = await jetstreamManager(submitter);
    const finishedCount = async (): Promise<number> => (await whileElecting(() => jsm.streams.info(DEFAULT_NAMES.results))).state.messages;
    // Mid-run: once a quarter of the tasks have finished and the victim holds deliveries, a server and
    // an agent process get SIGKILL. It resolves with the count that set the kill off: fewer than all,
    // so the kill was mid-run.
    const chaos = (async () => {
      let finished = 0;
      while ((finished = await finishedCount()) < TASKS / 4) await sleep(50);
      await Promise.race([
        started[0]!.holding,
        sleep(20_000).then(() => Promise.reject(new Error(`the victim took no more than ${VICTIM_APPLIES} tasks`))),
      ]);
      agents[0]!.kill('SIGKILL');
      await cluster!.servers[0]!.kill('SIGKILL');
      return finished;
    })();

    const accepted: string[] = [];
    const refused: string[] = [];
    const submitOne = async (i: number): Promise<void> => {
      // A submit is retried with the same task id, hence the same Nats-Msg-Id: the server keeps one copy.
      const draft = {
        task_id: `task-20260101-${i.toString(16).padStart(12, '0')}`,
        next_phase: 'tap.test.counter',
        input: { key: `k${i}` },
      };
      try {
        accepted.push((await whileElecting(() => submitDurable(submitter, draft), 30_000)).record.task_id);
      } catch (err) {
        refused.push(`${draft.task_id}: ${(err as Error).message}`);
      }
    };
    for (let i = 0; i < TASKS; i += 50) await Promise.all(Array.from({ length: Math.min(50, TASKS - i) }, (_, j) => submitOne(i + j)));
    expect(refused).toEqual([]);
    const finishedAtKill = await chaos;
    expect(finishedAtKill).toBeLessThan(TASKS);

    const deadline = Date.now() + 45_000;
    while ((await finishedCount()) < accepted.length && Date.now() < deadline) await sleep(200);

    // Exactly one finished record per accepted task, each completed.
    const results = await whileElecting(() => jsm.streams.info(DEFAULT_NAMES.results, { subjects_filter: 'tap.results.>' }));
    const perTask = results.state.subjects ?? {};
    expect(accepted.filter((id) => perTask[`tap.results.${id}`] === undefined)).toEqual([]);
    expect(Object.entries(perTask).filter(([, n]) => n !== 1)).toEqual([]);
    const records = await allMessages(jsm, DEFAULT_NAMES.results);
    expect(records).toHaveLength(accepted.length);
    expect(records.map((r) => (r.body as TaskRecord).state.status).filter((s) => s !== 'completed')).toEqual([]);

    // One effect per counter key: one write of its bucket key, recording the one task that applied it.
    const bucket = await whileElecting(() => jsm.streams.info(`KV_${COUNTER_BUCKET}`, { subjects_filter: `$KV.${COUNTER_BUCKET}.>` }));
    const writes = bucket.state.subjects ?? {};
    const kv = await new Kvm(submitter).open(COUNTER_BUCKET);
    const badEffects: string[] = [];
    for (let i = 0; i < TASKS; i++) {
      const key = counterKey(`k${i}`);
      const n = writes[`$KV.${COUNTER_BUCKET}.${key}`] ?? 0;
      const value = (await whileElecting(() => kv.get(key)))?.json() as CounterValue | undefined;
      if (n !== 1 || value?.count !== 1 || Object.keys(value.by).length !== 1)
        badEffects.push(`k${i}: ${n} writes, ${JSON.stringify(value)}`);
    }
    expect(badEffects).toEqual([]);
    // Each task's output is the count its one effect produced.
    const outputs = records.map((r) => [
      (r.body as TaskRecord).context.current_input,
      (r.body as TaskRecord).context.history.at(-1)?.output,
    ]);
    expect(outputs.filter(([input, output]) => JSON.stringify(output) !== JSON.stringify({ ...(input as object), count: 1 }))).toEqual([]);
    // The victim held deliveries when it died: they came back to the others as later attempts.
    expect(records.filter((r) => (r.body as TaskRecord).state.attempts > 0).length, 'no task was redelivered').toBeGreaterThan(0);

    // The recorded task streams obey the sequence, state and result rules, every task to its result.
    const events = await allMessages(jsm, DEFAULT_NAMES.events);
    expect(
      checkHistory(
        events.map((e) => e.body),
        undefined,
        { complete: true, durable: true },
      ),
    ).toEqual([]);
    const withStreams = new Set(events.map((e) => e.subject.split('.').at(-1)));
    expect(accepted.filter((id) => !withStreams.has(id))).toEqual([]);
    // The running event and the task.result of each task, and a running event per redelivery.
    expect(events.length).toBeGreaterThanOrEqual(2 * accepted.length);
  });
});
