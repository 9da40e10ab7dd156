/**
 * Scenario 7, the NATS binding: a TAP task round trip (tap.test.echo through the reference client
 * and the reference agent in a child process, over a real nats-server) sequentially and with 64
 * in flight, against a bare NATS request/reply echo on the same server (the floor), both as the
 * four-message task and as TAP 1.1's quiet task (two messages, as many as the floor's), each with
 * its ceiling beside (the same messages over bare NATS, bench/lib/bare-nats.ts); and the durable
 * row (nats-durable.ts). Every figure is measured in the same run as its baseline, repetitions
 * interleaved; without nats-server every row says so.
 */
import { connect as natsConnect } from '@nats-io/transport-node';
import { natsServerInstalled, startNatsServer, type NatsServer } from '../../reference/transports/nats/nats-server.testkit.ts';
import { spawnScript, started, type LineChild } from '../lib/children.ts';
import { type CpuPerTask, measuringCpu } from '../lib/cpu.ts';
import { inflight, sequential, warmUp, type Call } from '../lib/measure.ts';
import type { Budget } from '../lib/options.ts';
import { peer } from '../lib/paths.ts';
import { compare, missingBaseline, notRun, type Baseline, type Row } from '../lib/report.ts';
import { spread } from '../lib/stats.ts';
import { bareNats } from '../lib/bare-nats.ts';
import { bareFour, bareQuiet, captureTapTask, echoInput, tapConnect, type TapTaskTexts } from '../lib/systems.ts';
import { DEPTH, ratioTarget, SCENARIO } from './nats-common.ts';
import { AGENTS, DURABLE_ID, DURABLE_TARGET, durable } from './nats-durable.ts';
import { cpuExtra, oneLine } from './roundtrip.ts';

const IDS = {
  seq: 'nats.roundtrip.sequential',
  fly: 'nats.roundtrip.inflight64',
  quietSeq: 'nats.roundtrip.quiet.sequential',
  quietFly: 'nats.roundtrip.quiet.inflight64',
  durable: DURABLE_ID,
} as const;
/** The issue's targets for this scenario: a ratio to the floor measured in the same run. */
const FLY_TARGET = { text: `Round trip over NATS with ${DEPTH} in flight at least 0.8× the bare NATS request/reply floor`, at: 0.8 };

/** The row ids this scenario produces. */
export function natsRowIds(): string[] {
  return [IDS.seq, IDS.fly, IDS.quietSeq, IDS.quietFly, IDS.durable];
}

interface EchoSystem {
  id: SystemId;
  name: string;
  call: Call;
  /** The child that answers (the agent or the echo), whose CPU is read per task. */
  pid?: number;
  /** Measured with 64 in flight only (the ceilings). */
  inflightOnly?: boolean;
  close(): Promise<void>;
}

type SystemId = 'tap' | 'quiet' | 'bare' | 'bare4' | 'bare2';
const NAMES: Record<SystemId, string> = {
  tap: 'TAP over NATS (reference client + reference agent)',
  quiet: 'TAP 1.1 quiet task over NATS (request → result)',
  bare: 'bare NATS request/reply echo (floor)',
  bare4: "bare NATS, TAP's four messages a task, each with the binding's numbered header (ceiling)",
  bare2: "bare NATS, the quiet task's two messages, each with the binding's numbered header (quiet ceiling)",
};
/** The ceiling of each TAP flow: its messages, as TAP sent them, over bare NATS. */
const CEILING = { tap: 'bare4', quiet: 'bare2' } as const;

/**
 * A ceiling (bench/lib/bare-nats.ts): TAP's messages of a task, captured from the reference, sent
 * over bare NATS with no protocol work, so that a ratio to the floor says what the wire alone costs.
 */
async function ceilingOverNats(server: NatsServer, task: Promise<TapTaskTexts>, id: 'bare4' | 'bare2'): Promise<EchoSystem> {
  const texts = await task;
  const shape = id === 'bare4' ? bareFour : bareQuiet;
  const s = await shape(() => bareNats(server), texts);
  return { id, name: NAMES[id], call: s.call, pid: s.pid, inflightOnly: true, close: s.close };
}

/**
 * A reference client connected through the binding to the reference agent `agent` (a child
 * process); with `quiet`, each task is a TAP 1.1 quiet task (two messages, as the floor's request
 * and reply). Both TAP systems use one agent: two processes serving one agent id on a server
 * would each take some sessions, and each one's CPU would be another's work.
 */
async function tapOverNats(server: NatsServer, agent: LineChild, quiet = false): Promise<EchoSystem> {
  const { connectNatsTransport } = await import('../../dist/reference/transports/nats/connect.js');
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
    `interleaved, each of up to ${budget.sequentialCalls} sequential calls / ${budget.inflightCalls} calls with ${DEPTH} in flight (at most ${budget.repMs / 1000} s each); ` +
    `the ceilings (${DEPTH} in flight only): a bare peer in a child answering the texts of a reference task over NATS, each message with a numbered Tap-Seq header, every one parsed`;
  const base = (id: string, title: string) => ({ id, scenario: SCENARIO, title, unit: 'calls/s', better: 'higher' as const, method });
  const seqBase = base(IDS.seq, 'round trip over NATS, sequential');
  const flyBase = base(IDS.fly, `round trip over NATS, ${DEPTH} in flight`);
  const quietSeqBase = base(IDS.quietSeq, 'round trip over NATS, sequential, TAP 1.1 quiet task (request → result)');
  const quietFlyBase = base(IDS.quietFly, `round trip over NATS, ${DEPTH} in flight, TAP 1.1 quiet task (request → result)`);
  const live: EchoSystem[] = [];
  const failed = new Map<string, string>();
  const agent = spawnScript(peer('tap-nats-agent.ts'), ['--server', server.url]);
  const agentUp = started([agent], 'the TAP agent');
  const task = captureTapTask();
  task.catch(() => {});
  const makers: [SystemId, () => Promise<EchoSystem>][] = [
    ['tap', () => agentUp.then(() => tapOverNats(server, agent))],
    ['quiet', () => agentUp.then(() => tapOverNats(server, agent, true))],
    ['bare', () => bareEcho(server)],
    ['bare4', () => ceilingOverNats(server, task, 'bare4')],
    ['bare2', () => ceilingOverNats(server, task, 'bare2')],
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
      for (const s of order.filter((x) => !x.inflightOnly)) {
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
    // The ceiling is measured with 64 in flight only.
    if (!target) return { ...b, tap, baselines: [floor, beside], targets: [] };
    const ceiling = baselineOf(CEILING[subject]);
    return { ...b, tap, baselines: [floor, beside, ceiling], targets: [ratioTarget(target, tap, floor, ceiling)] };
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
