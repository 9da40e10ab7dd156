/**
 * Scenario 7, the NATS binding: a TAP task round trip (tap.test.echo through the reference client
 * and the reference agent in a child process, over a real nats-server) sequentially and with 64
 * in flight, against a bare NATS request/reply echo on the same server (the floor), both as the
 * four-message task and as TAP 1.1's quiet task (two messages, as many as the floor's); and durable
 * tasks per second with four runner processes on JetStream, against four bare consumers pulling
 * and acknowledging the same records from a work-queue stream. Every figure is measured in the
 * same run as its baseline, repetitions interleaved; without nats-server every row says so.
 */
import { connect as natsConnect, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, jetstream, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { natsServerInstalled, startNatsServer, type NatsServer } from '../../reference/transports/nats/nats-server.testkit.ts';
import { delay, spawnScript, type LineChild } from '../lib/children.ts';
import { type CpuPerTask, measuringCpu } from '../lib/cpu.ts';
import { inflight, sequential, warmUp, type Call } from '../lib/measure.ts';
import type { Budget } from '../lib/options.ts';
import { peer } from '../lib/paths.ts';
import { compare, missingBaseline, notRun, ratioRange, type Baseline, type Figure, type Row, type Target } from '../lib/report.ts';
import { spread } from '../lib/stats.ts';
import { echoInput, tapConnect } from '../lib/systems.ts';
import { cpuExtra, oneLine } from './roundtrip.ts';

const SCENARIO = '7. NATS binding';
const DEPTH = 64;
const AGENTS = 4;
const BATCH = 8;
const IDS = {
  seq: 'nats.roundtrip.sequential',
  fly: 'nats.roundtrip.inflight64',
  quietSeq: 'nats.roundtrip.quiet.sequential',
  quietFly: 'nats.roundtrip.quiet.inflight64',
  durable: 'nats.durable.four-agents',
} as const;
/** The issue's targets for this scenario: a ratio to the floor measured in the same run. */
const FLY_TARGET = { text: `Round trip over NATS with ${DEPTH} in flight at least 0.8× the bare NATS request/reply floor`, at: 0.8 };
const DURABLE_TARGET = { text: `${AGENTS} durable runners at least 0.5× bare JetStream publish and pull-ack`, at: 0.5 };

/** A target on the ratio of TAP to its floor, with the ratio's spread over the repetitions. */
function ratioTarget(target: { text: string; at: number }, tap: Figure, floor: Baseline): Target {
  if (floor.ratio === null || floor.not_run) return { text: target.text, measured: floor.not_run ?? 'no floor figure', met: null };
  return {
    text: target.text,
    measured: `${floor.ratio.toFixed(2)}× the floor (${ratioRange(tap.value, floor.value)})`,
    met: floor.ratio >= target.at,
  };
}

/** The row ids this scenario produces. */
export function natsRowIds(): string[] {
  return [IDS.seq, IDS.fly, IDS.quietSeq, IDS.quietFly, IDS.durable];
}

async function started(children: LineChild[], what: string): Promise<void> {
  try {
    await Promise.all(children.map((c, i) => c.line((l) => l === 'ready', 60_000, `${what} ${i} starting`)));
  } catch (err) {
    await Promise.all(children.map((c) => c.stop(1000)));
    throw err;
  }
}

interface EchoSystem {
  id: SystemId;
  name: string;
  call: Call;
  /** The child that answers (the agent or the echo), whose CPU is read per task. */
  pid?: number;
  close(): Promise<void>;
}

type SystemId = 'tap' | 'quiet' | 'bare';
const NAMES: Record<SystemId, string> = {
  tap: 'TAP over NATS (reference client + reference agent)',
  quiet: 'TAP 1.1 quiet task over NATS (request → result)',
  bare: 'bare NATS request/reply echo (floor)',
};

/**
 * A reference client connected through the binding to the reference agent `agent` (a child
 * process); with `quiet`, each task is a TAP 1.1 quiet task (two messages, as the floor's request
 * and reply). Both TAP systems use one agent: two processes serving one agent id on a server
 * would each take some sessions, and each one's CPU would be another's work.
 */
async function tapOverNats(server: NatsServer, agent: LineChild, quiet = false): Promise<EchoSystem> {
  const { connectNatsTransport } = await import('../../reference/transports/nats/connect.ts');
  const client = await tapConnect(await connectNatsTransport(`${server.url}/tap.reference-agent`), 100_000);
  const options = quiet ? { quiet: true } : {};
  return {
    id: quiet ? 'quiet' : 'tap',
    name: NAMES[quiet ? 'quiet' : 'tap'],
    pid: agent.child.pid,
    async call(i) {
      const result = await client.submit('tap.test.echo', echoInput(i), options).result;
      if (result.status !== 'completed') throw new Error(`tap.test.echo ended ${result.status}: ${JSON.stringify(result.error)}`);
    },
    async close() {
      await client.close().catch(() => {});
    },
  };
}

/** A bare request/reply echo in a child process, and a requester parsing each reply. */
async function bareEcho(server: NatsServer): Promise<EchoSystem> {
  const echo = spawnScript(peer('bare-nats-echo.ts'), ['--server', server.url]);
  await started([echo], 'the bare echo');
  const nc = await natsConnect({ servers: server.url });
  return {
    id: 'bare',
    name: NAMES.bare,
    pid: echo.child.pid,
    async call(i) {
      const reply = await nc.request('bench.echo', JSON.stringify({ id: i, payload: echoInput(i) }), { timeout: 10_000 });
      if ((JSON.parse(reply.string()) as { id: number }).id !== i) throw new Error('the echo answered another request');
    },
    async close() {
      await nc.close().catch(() => {});
      await echo.stop(2000);
    },
  };
}

async function roundtrips(budget: Budget, server: NatsServer, log: (line: string) => void): Promise<Row[]> {
  const method =
    `one nats-server on 127.0.0.1, the agent or echo in a child process; one warm-up of up to ${budget.warmupCalls} calls, then ${budget.reps} repetitions ` +
    `interleaved, each of up to ${budget.sequentialCalls} sequential calls / ${budget.inflightCalls} calls with ${DEPTH} in flight (at most ${budget.repMs / 1000} s each)`;
  const base = (id: string, title: string) => ({ id, scenario: SCENARIO, title, unit: 'calls/s', better: 'higher' as const, method });
  const seqBase = base(IDS.seq, 'round trip over NATS, sequential');
  const flyBase = base(IDS.fly, `round trip over NATS, ${DEPTH} in flight`);
  const quietSeqBase = base(IDS.quietSeq, 'round trip over NATS, sequential, TAP 1.1 quiet task (request → result)');
  const quietFlyBase = base(IDS.quietFly, `round trip over NATS, ${DEPTH} in flight, TAP 1.1 quiet task (request → result)`);
  const live: EchoSystem[] = [];
  const failed = new Map<string, string>();
  const agent = spawnScript(peer('tap-nats-agent.ts'), ['--server', server.url]);
  const agentUp = started([agent], 'the TAP agent');
  const makers: [SystemId, () => Promise<EchoSystem>][] = [
    ['tap', () => agentUp.then(() => tapOverNats(server, agent))],
    ['quiet', () => agentUp.then(() => tapOverNats(server, agent, true))],
    ['bare', () => bareEcho(server)],
  ];
  for (const [id, make] of makers) {
    try {
      const s = await make();
      await warmUp(s.call, budget.warmupCalls, budget.warmupMs);
      live.push(s);
    } catch (err) {
      failed.set(id, oneLine(err));
    }
  }
  const seq = new Map<string, { rate: number[]; p50: number[]; p99: number[] }>();
  const fly = new Map<string, number[]>();
  const seqCpu = new Map<string, CpuPerTask[]>();
  const flyCpu = new Map<string, CpuPerTask[]>();
  const keepCpu = (into: Map<string, CpuPerTask[]>, id: string, cpu: CpuPerTask): void => {
    into.set(id, [...(into.get(id) ?? []), cpu]);
  };
  try {
    for (let rep = 0; rep < budget.reps; rep++) {
      const order = rep % 2 === 0 ? live : [...live].reverse();
      for (const s of order) {
        const r = await measuringCpu(s.pid, () => sequential(s.call, budget.sequentialCalls, budget.repMs)).catch(
          (err) => void failed.set(s.id, oneLine(err)),
        );
        if (!r) continue;
        keepCpu(seqCpu, s.id, r.cpu);
        const e = seq.get(s.id) ?? { rate: [], p50: [], p99: [] };
        e.rate.push(r.rate);
        e.p50.push(r.p50_us);
        e.p99.push(r.p99_us);
        seq.set(s.id, e);
      }
      for (const s of order) {
        const r = await measuringCpu(s.pid, () => inflight(s.call, budget.inflightCalls, DEPTH, budget.repMs)).catch(
          (err) => void failed.set(s.id, oneLine(err)),
        );
        if (!r) continue;
        keepCpu(flyCpu, s.id, r.cpu);
        fly.set(s.id, [...(fly.get(s.id) ?? []), r.rate]);
      }
      log(
        `  repetition ${rep + 1}/${budget.reps}: ${live.map((s) => `${s.id} ${Math.round(seq.get(s.id)?.rate.at(-1) ?? NaN)}/${Math.round(fly.get(s.id)?.at(-1) ?? NaN)}`).join(', ')}`,
      );
    }
  } finally {
    for (const s of live) await s.close();
    await agent.stop(2000);
  }
  /** A row of `subject` (the four-message task or the quiet one) against the floor, and the other TAP flow beside it. */
  const rowOf = (b: typeof seqBase, subject: 'tap' | 'quiet', figure: (id: SystemId) => Row['tap'], target?: typeof FLY_TARGET): Row => {
    const tap = failed.has(subject) ? null : figure(subject);
    if (!tap) return notRun(b, `${NAMES[subject]} failed: ${failed.get(subject) ?? 'no figure'}`, target ? [target.text] : []);
    const baselineOf = (id: SystemId): Baseline => {
      const other = failed.has(id) ? null : figure(id);
      return other ? compare(tap, id, other) : missingBaseline(id, NAMES[id], failed.get(id) ?? 'no figure');
    };
    const floor = baselineOf('bare');
    const beside = baselineOf(subject === 'tap' ? 'quiet' : 'tap');
    return { ...b, tap, baselines: [floor, beside], targets: target ? [ratioTarget(target, tap, floor)] : [] };
  };
  const seqFigure = (id: SystemId): Row['tap'] => {
    const e = seq.get(id);
    return e
      ? { name: NAMES[id], value: spread(e.rate), extra: { p50_us: spread(e.p50), p99_us: spread(e.p99), ...cpuExtra(seqCpu.get(id)) } }
      : null;
  };
  const flyFigure = (id: SystemId): Row['tap'] => {
    const e = fly.get(id);
    return e ? { name: NAMES[id], value: spread(e), extra: cpuExtra(flyCpu.get(id)) } : null;
  };
  const quietTarget = { ...FLY_TARGET, text: FLY_TARGET.text.replace('Round trip', 'Quiet task round trip') };
  return [
    rowOf(seqBase, 'tap', seqFigure),
    rowOf(flyBase, 'tap', flyFigure, FLY_TARGET),
    rowOf(quietSeqBase, 'quiet', seqFigure),
    rowOf(quietFlyBase, 'quiet', flyFigure, quietTarget),
  ];
}

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
  idempotency: 'CEIL_IDEMPOTENCY',
};

/** Figures of one durable race; a baseline that failed is its error. */
interface DurableRace {
  tap: number;
  bare: number | string;
  ceiling: number | string;
  recordBytes: number;
}

/**
 * One durable race on a fresh server: TAP's four runners; four bare consumers of the same records
 * (the floor); then four bare consumers making a runner's JetStream operations for each (the
 * ceiling, bench/peers/bare-js-durable.ts). Tasks per second each.
 */
async function durableRace(n: number, warm: number): Promise<DurableRace> {
  const { ensureStreams, submitDurable, DEFAULT_NAMES, taskSubject } = await import('../../reference/jetstream/index.ts');
  const server = await startNatsServer();
  let nc: NatsConnection | undefined;
  let children: LineChild[] = [];
  const consumers = async (script: string, args: string[], what: string): Promise<void> => {
    children = Array.from({ length: AGENTS }, () => spawnScript(peer(script), ['--server', server.url, ...args, '--batch', String(BATCH)]));
    await started(children, what);
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
    const tap = await publishAndWait(
      async (i) => {
        texts[i] = await submit(i);
      },
      n,
      async () => (await results(DEFAULT_NAMES.results)) >= warm + n,
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
      bare = await publishAndWait(
        async (i) => {
          await js.publish('bare.tasks.work', texts[i]!, { msgID: `bare-${i}` });
          published++;
        },
        n,
        async () => published >= n && (await jsm.streams.info('BARE_TASKS')).state.messages === 0,
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
      ceiling = await publishAndWait(
        (i) => js.publish(subject, texts[i]!, { msgID: `ceiling-${i}` }),
        n,
        async () => (await results(c.results)) >= warm + n,
      );
    } catch (err) {
      ceiling = oneLine(err);
    }
    return { tap, bare, ceiling, recordBytes: Buffer.byteLength(texts[0] ?? '') };
  } finally {
    await stopChildren();
    await nc?.close().catch(() => {});
    await server.stop();
  }
}

async function durable(budget: Budget, log: (line: string) => void): Promise<Row> {
  const n = budget.workspaceTasks;
  // 750 records a runner (or consumer) before the clock starts: after 75 they still ran partly
  // unoptimized code (every system's rate rose by a third with the longer warm-up; the ratios held).
  const warm = Math.min(3 * n, 3000);
  const row = {
    id: IDS.durable,
    scenario: SCENARIO,
    title: `${AGENTS} durable runner processes over ${n.toLocaleString('en-US')} tasks`,
    unit: 'tasks/s',
    better: 'higher' as const,
    method:
      `a fresh nats-server per repetition; after a warm-up of ${warm} tasks (untimed, the same for both), the clock runs from the first publish (${DEPTH} at a time, each acknowledged by the server) until every task is done: ` +
      `for TAP, ${AGENTS} runner processes (pull batches of ${BATCH}) have stored every finished record in TAP_RESULTS (each task also stores two TAP_EVENTS messages, its running event on the condition that its stream is empty, and its task.result); ` +
      `for the floor, ${AGENTS} bare consumers (pull batches of ${BATCH}) have parsed and acknowledged the same record texts on a work-queue stream; ` +
      `for the ceiling, ${AGENTS} bare consumers (${BATCH} at once) have made a runner's JetStream operations for each of the same records on streams of TAP's configuration; ${budget.workspaceReps} repetitions`,
  };
  const tapRuns: number[] = [];
  const runs = { bare: [] as number[], ceiling: [] as number[] };
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
    recordBytes = r.recordBytes;
    for (const k of ['bare', 'ceiling'] as const) {
      const v = r[k];
      if (typeof v === 'number') runs[k].push(v);
      else errors[k] = v;
    }
    const said = (v: number | string) => (typeof v === 'number' ? String(Math.round(v)) : v);
    log(
      `  repetition ${rep + 1}/${budget.workspaceReps}: TAP durable ${Math.round(r.tap)} tasks/s, bare JetStream ${said(r.bare)}, a runner's operations by the bare client ${said(r.ceiling)}`,
    );
  }
  const tap = { name: `TAP durable runner on JetStream (${AGENTS} agents)`, value: spread(tapRuns) };
  const names = {
    bare: `bare JetStream publish and pull-ack of the same records (${AGENTS} consumers)`,
    ceiling: `a runner's JetStream operations by the bare client: store two events (the first on the condition of an empty stream) and the finished record, acknowledge (${AGENTS} consumers; ceiling)`,
  };
  const baselineOf = (k: 'bare' | 'ceiling'): Baseline =>
    runs[k].length === 0
      ? missingBaseline(k, names[k], errors[k] ?? 'no figure')
      : compare(tap, k, { name: names[k], value: spread(runs[k]) });
  const floor = baselineOf('bare');
  const ceiling = baselineOf('ceiling');
  const target = ratioTarget(DURABLE_TARGET, tap, floor);
  if (ceiling.ratio !== null && !ceiling.not_run && floor.ratio !== null && !floor.not_run) {
    const ceilingOfFloor = floor.value.median / ceiling.value.median;
    target.measured += `; TAP ${ceiling.ratio.toFixed(2)}× its ceiling, which is ${(1 / ceilingOfFloor).toFixed(2)}× the floor`;
  }
  return {
    ...row,
    tap,
    baselines: [floor, ceiling],
    targets: [target],
    details: { record_bytes: recordBytes },
  };
}

/** Runs the scenario's selected rows, or reports each as not run when nats-server is missing. */
export async function nats(budget: Budget, selected: (id: string) => boolean, log: (line: string) => void): Promise<Row[]> {
  const wanted = natsRowIds().filter(selected);
  if (!natsServerInstalled) {
    log('nats: nats-server is not installed: the NATS rows are not run (apt-get install -y nats-server, or set TAP_NATS_SERVER)');
    return wanted.map((id) =>
      notRun(
        { id, scenario: SCENARIO, title: id, unit: id === IDS.durable ? 'tasks/s' : 'calls/s', better: 'higher', method: '' },
        'nats-server is not installed (apt-get install -y nats-server, or set TAP_NATS_SERVER)',
        id === IDS.fly ? [FLY_TARGET.text] : id === IDS.durable ? [DURABLE_TARGET.text] : [],
      ),
    );
  }
  const rows: Row[] = [];
  if ([IDS.seq, IDS.fly, IDS.quietSeq, IDS.quietFly].some(selected)) {
    log('nats: round trip over the NATS binding against a bare request/reply echo');
    const server = await startNatsServer();
    try {
      rows.push(...(await roundtrips(budget, server, log)).filter((r) => selected(r.id)));
    } finally {
      await server.stop();
    }
  }
  if (selected(IDS.durable)) {
    log(`nats: ${AGENTS} durable runners against bare JetStream publish-and-ack, ${budget.workspaceTasks} tasks`);
    rows.push(await durable(budget, log));
  }
  return rows;
}
