/**
 * The NATS scenario's durable row: four runner processes (the reference's durable runner) over
 * JetStream against four bare consumers of the same records (the floor), and against four bare
 * consumers making a runner's JetStream operations for each record (the ceiling).
 */
import { connect as natsConnect, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, jetstream, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { startNatsServer } from '../../reference/transports/nats/nats-server.testkit.ts';
import { delay, spawnScript, started, type LineChild } from '../lib/children.ts';
import { cpuPerCall, sideCpuExtras, type SideCpu } from '../lib/cpu.ts';
import type { Budget } from '../lib/options.ts';
import { peer } from '../lib/paths.ts';
import { compare, missingBaseline, notRun, type Baseline, type Row } from '../lib/report.ts';
import { spread } from '../lib/stats.ts';
import { echoInput } from '../lib/systems.ts';
import { DEPTH, ratioTarget, SCENARIO } from './nats-common.ts';
import { oneLine } from './roundtrip.ts';

/** Runner processes (and bare consumers) in the race. */
export const AGENTS = 4;
/** Deliveries each takes at once. */
const BATCH = 8;
export const DURABLE_ID = 'nats.durable.four-agents';
/** The target for the row: a ratio to the floor measured in the same run. */
export const DURABLE_TARGET = { text: `${AGENTS} durable runners at least 0.5× bare JetStream publish and pull-ack`, at: 0.5 };

/** Publishes `n` messages, 64 at a time, each acknowledged by the server; then waits until `done()` says all were handled. */
async function publishAndWait(publish: (i: number) => Promise<unknown>, n: number, done: () => Promise<boolean>): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < n; i += DEPTH) await Promise.all(Array.from({ length: Math.min(DEPTH, n - i) }, (_, j) => publish(i + j)));
  const stop = t0 + 180_000;
  while (!(await done())) {
    if (performance.now() > stop) throw new Error(`not all ${n} tasks were handled within 180 s`);
    await delay(5);
  }
  return n / ((performance.now() - t0) / 1000);
}

/** The arguments of the durable row's runner `i` (bench/peers/durable-runner.ts), also used by bench/durable-requests.ts. */
export function durableRunnerArgs(serverUrl: string, i: number): string[] {
  return ['--server', serverUrl, '--agent-id', `bench.runner-${i}`, '--capability', 'bench.work', '--batch', String(BATCH)];
}

/** The names of the ceiling's streams: TAP's configuration (ensureStreams), other names. */
const CEILING_NAMES = {
  prefix: 'ceil',
  tasks: 'CEIL_TASKS',
  results: 'CEIL_RESULTS',
  events: 'CEIL_EVENTS',
  dead: 'CEIL_DEAD',
  advisories: 'CEIL_ADVISORIES',
  idempotency: 'CEIL_IDEMPOTENCY',
};

/** Figures of one durable race, each with its CPU per task; a baseline that failed is its error. */
interface DurableRace {
  tap: number;
  bare: number | string;
  ceiling: number | string;
  cpu: { tap: SideCpu; bare?: SideCpu; ceiling?: SideCpu };
  recordBytes: number;
}

/**
 * One durable race on a fresh server: TAP's four runners; four bare consumers of the same records
 * (the floor); then four bare consumers making a runner's JetStream operations for each (the
 * ceiling, bench/peers/bare-js-durable.ts). Tasks per second each.
 */
async function durableRace(n: number, warm: number): Promise<DurableRace> {
  const { ensureStreams, submitDurable, DEFAULT_NAMES, taskSubject } = await import('../../dist/reference/jetstream/index.js');
  const server = await startNatsServer();
  let nc: NatsConnection | undefined;
  let children: LineChild[] = [];
  const consumers = async (script: string, args: string[], what: string): Promise<void> => {
    children = Array.from({ length: AGENTS }, () => spawnScript(peer(script), ['--server', server.url, ...args, '--batch', String(BATCH)]));
    await started(children, what);
  };
  const cpu: Partial<DurableRace['cpu']> = {};
  /** `publishAndWait`'s rate, noting the CPU of each side per task in `cpu[system]`. */
  const timed = async (system: keyof DurableRace['cpu'], run: () => Promise<number>): Promise<number> => {
    const pids = children.flatMap((c) => (c.child.pid === undefined ? [] : [c.child.pid]));
    const m = await cpuPerCall({ agents: pids, server: server.pid === undefined ? [] : [server.pid] }, n, run);
    cpu[system] = { requester: m.requester, agents: m.groups.agents, server: m.groups.server };
    return m.result;
  };
  const stopChildren = async (): Promise<void> => {
    await Promise.all(children.map((c) => c.stop(2000)));
    children = [];
  };
  try {
    nc = await natsConnect({ servers: server.url });
    const { jsm } = await ensureStreams(nc);
    children = Array.from({ length: AGENTS }, (_, i) => spawnScript(peer('durable-runner.ts'), durableRunnerArgs(server.url, i)));
    await started(children, 'runner');
    const texts: string[] = [];
    const warmTexts: string[] = [];
    const submit = async (i: number): Promise<string> => {
      const { record } = await submitDurable(nc!, {
        task_id: `task-20260101-${i.toString(16).padStart(12, '0')}`,
        next_phase: 'bench.work',
        input: echoInput(i),
      });
      return JSON.stringify(record);
    };
    // The warm-up: tasks of their own (ids after the measured ones), untimed, so that the runners are measured as they run for long.
    const results = async (stream: string) => (await jsm.streams.info(stream)).state.messages;
    await publishAndWait(
      async (i) => {
        warmTexts[i] = await submit(n + i);
      },
      warm,
      async () => (await results(DEFAULT_NAMES.results)) >= warm,
    );
    const tap = await timed('tap', () =>
      publishAndWait(
        async (i) => {
          texts[i] = await submit(i);
        },
        n,
        async () => (await results(DEFAULT_NAMES.results)) >= warm + n,
      ),
    );
    await stopChildren();
    const js = jetstream(nc);
    let bare: number | string;
    try {
      await jsm.streams.add({
        name: 'BARE_TASKS',
        subjects: ['bare.tasks.>'],
        retention: RetentionPolicy.Workqueue,
        storage: StorageType.File,
      });
      await jsm.consumers.add('BARE_TASKS', { durable_name: 'bare', ack_policy: AckPolicy.Explicit, filter_subject: 'bare.tasks.work' });
      await consumers('bare-js-consumer.ts', ['--stream', 'BARE_TASKS', '--consumer', 'bare'], 'bare consumer');
      let published = 0;
      const drained = async () => (await jsm.streams.info('BARE_TASKS')).state.messages === 0;
      await publishAndWait((i) => js.publish('bare.tasks.work', texts[i % n]!, { msgID: `bare-warm-${i}` }), warm, drained);
      bare = await timed('bare', () =>
        publishAndWait(
          async (i) => {
            await js.publish('bare.tasks.work', texts[i]!, { msgID: `bare-${i}` });
            published++;
          },
          n,
          async () => published >= n && (await jsm.streams.info('BARE_TASKS')).state.messages === 0,
        ),
      );
    } catch (err) {
      bare = oneLine(err);
    }
    await stopChildren();
    let ceiling: number | string;
    try {
      const c = CEILING_NAMES;
      await ensureStreams(nc, { names: c });
      const subject = taskSubject(c, 'bench.work');
      await jsm.consumers.add(c.tasks, { durable_name: 'ceiling', ack_policy: AckPolicy.Explicit, filter_subject: subject });
      await consumers('bare-js-durable.ts', ['--prefix', c.prefix, '--stream', c.tasks, '--consumer', 'ceiling'], 'ceiling consumer');
      await publishAndWait(
        (i) => js.publish(subject, warmTexts[i]!, { msgID: `ceiling-warm-${i}` }),
        warm,
        async () => (await results(c.results)) >= warm,
      );
      ceiling = await timed('ceiling', () =>
        publishAndWait(
          (i) => js.publish(subject, texts[i]!, { msgID: `ceiling-${i}` }),
          n,
          async () => (await results(c.results)) >= warm + n,
        ),
      );
    } catch (err) {
      ceiling = oneLine(err);
    }
    return { tap, bare, ceiling, cpu: { ...cpu, tap: cpu.tap! }, recordBytes: Buffer.byteLength(texts[0] ?? '') };
  } finally {
    await stopChildren();
    await nc?.close().catch(() => {});
    await server.stop();
  }
}

export async function durable(budget: Budget, log: (line: string) => void): Promise<Row> {
  const n = budget.workspaceTasks;
  // 750 records a runner (or consumer) before the clock starts: after 75 they still ran partly
  // unoptimized code (every system's rate rose by a third with the longer warm-up; the ratios held).
  const warm = Math.min(3 * n, 3000);
  const row = {
    id: DURABLE_ID,
    scenario: SCENARIO,
    title: `${AGENTS} durable runner processes over ${n.toLocaleString('en-US')} tasks`,
    unit: 'tasks/s',
    better: 'higher' as const,
    method:
      `a fresh nats-server per repetition; after a warm-up of ${warm} tasks (untimed, the same for both), the clock runs from the first publish (${DEPTH} at a time, each acknowledged by the server) until every task is done: ` +
      `for TAP, ${AGENTS} runner processes (pull batches of ${BATCH}) have stored every finished record in TAP_RESULTS (each task also stores two TAP_EVENTS messages, its running event on the condition that its stream is empty, and its task.result); ` +
      `for the floor, ${AGENTS} bare consumers (pull batches of ${BATCH}) have parsed and acknowledged the same record texts on a work-queue stream; ` +
      `for the ceiling, ${AGENTS} bare consumers (${BATCH} at once) have made a runner's JetStream operations for each of the same records on streams of TAP's configuration; each with the CPU per task of the publisher (the bench process), the four consumers together and nats-server over its measured phase; ${budget.workspaceReps} repetitions`,
  };
  const tapRuns: number[] = [];
  const runs = { bare: [] as number[], ceiling: [] as number[] };
  const cpus = { tap: [] as SideCpu[], bare: [] as SideCpu[], ceiling: [] as SideCpu[] };
  const errors: { bare?: string; ceiling?: string } = {};
  let recordBytes = 0;
  for (let rep = 0; rep < budget.workspaceReps; rep++) {
    let r: DurableRace;
    try {
      r = await durableRace(n, warm);
    } catch (err) {
      return notRun(row, `the durable race failed: ${oneLine(err)}`, [DURABLE_TARGET.text]);
    }
    tapRuns.push(r.tap);
    cpus.tap.push(r.cpu.tap);
    recordBytes = r.recordBytes;
    for (const k of ['bare', 'ceiling'] as const) {
      const v = r[k];
      const c = r.cpu[k];
      if (typeof v === 'number') runs[k].push(v);
      else errors[k] = v;
      if (typeof v === 'number' && c) cpus[k].push(c);
    }
    const said = (v: number | string) => (typeof v === 'number' ? String(Math.round(v)) : v);
    log(
      `  repetition ${rep + 1}/${budget.workspaceReps}: TAP durable ${Math.round(r.tap)} tasks/s, bare JetStream ${said(r.bare)}, a runner's operations by the bare client ${said(r.ceiling)}`,
    );
  }
  const tap = { name: `TAP durable runner on JetStream (${AGENTS} agents)`, value: spread(tapRuns), extra: sideCpuExtras(cpus.tap) };
  const names = {
    bare: `bare JetStream publish and pull-ack of the same records (${AGENTS} consumers)`,
    ceiling: `a runner's JetStream operations by the bare client: store two events (the first on the condition of an empty stream) and the finished record, acknowledge (${AGENTS} consumers; ceiling)`,
  };
  const baselineOf = (k: 'bare' | 'ceiling'): Baseline =>
    runs[k].length === 0
      ? missingBaseline(k, names[k], errors[k] ?? 'no figure')
      : compare(tap, k, { name: names[k], value: spread(runs[k]), extra: sideCpuExtras(cpus[k]) });
  const floor = baselineOf('bare');
  const ceiling = baselineOf('ceiling');
  const target = ratioTarget(DURABLE_TARGET, tap, floor, ceiling);
  return {
    ...row,
    tap,
    baselines: [floor, ceiling],
    targets: [target],
    details: { record_bytes: recordBytes },
  };
}
