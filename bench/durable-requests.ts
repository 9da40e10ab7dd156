/**
 * What a durable task costs the server and the processes around it, with the durable row's set-up
 * (bench/scenarios/nats.ts): four runner processes (bench/peers/durable-runner.ts, 8 tasks at once)
 * on a fresh nats-server, records submitted 64 at a time with submitDurable. Two passes after an
 * untimed warm-up: the first counts, per task, every message clients send to JetStream (a
 * subscription to `>` on its own connection, by kind: `$JS.API` requests by operation,
 * acknowledgements by kind and whether they ask for an answer, publishes to the TAP streams and the
 * bucket); the second, without that subscription, reads the CPU time of the runners (from /proc)
 * and of this process, the requester, per 1,000 tasks. Needs dist/ (npm run build). `--profile <dir>`
 * writes a CPU profile of each runner there (read one with profile-top.ts); `--bare` measures the
 * row's floor the same way (four bare consumers pulling and acknowledging the same record texts):
 *   npx tsx bench/durable-requests.ts [--tasks 1000] [--bare] [--profile /tmp/tap-prof]
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, jetstream, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { recordFromDraft } from '../dist/reference/workspace/index.js';
import { DEFAULT_NAMES, ensureStreams, submitDurable } from '../dist/reference/jetstream/index.js';
import { startNatsServer } from '../reference/transports/nats/nats-server.testkit.ts';
import { compilePeers, delay, nodeArgs, watchLines, type LineChild } from './lib/children.ts';
import { childCpuUs, ownCpuUs } from './lib/cpu.ts';
import { peer, ROOT } from './lib/paths.ts';
import { echoInput } from './lib/systems.ts';
import { durableRunnerArgs } from './scenarios/nats-durable.ts';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '1000' },
    warm: { type: 'string', default: '3000' },
    profile: { type: 'string' },
    /** Measures the row's floor instead: four bare consumers pulling and acknowledging the same record texts. */
    bare: { type: 'boolean', default: false },
  },
});
const n = Number(values.tasks);
const warm = Number(values.warm);
const AGENTS = 4;
const BARE = 'BARE_TASKS';
const DEPTH = 64;

/** The kind of a message a client sent: what the server is asked to do with it. */
function kindOf(subject: string, data: Uint8Array, reply: string | undefined): string | null {
  // A delivery of a consumer keeps its stream subject, with an acknowledgement subject to reply to: the server sent it.
  if (reply?.startsWith('$JS.ACK.')) return 'delivery (from the server)';
  if (subject.startsWith('$JS.API.'))
    return `request ${subject
      .split('.')
      .slice(2, 4)
      .join('.')
      .replace(/\.TAP_.*$/, '')}`;
  if (subject.startsWith('$JS.ACK.')) {
    const body = new TextDecoder().decode(data.subarray(0, 4)) || '+ACK';
    return `${body.trim()} ${reply ? 'with an answer' : 'without an answer'}`;
  }
  if (subject.startsWith('$KV.')) return `publish to the bucket ${reply ? 'with an answer' : 'without an answer'}`;
  const kind = subject.split('.')[1];
  if ((subject.startsWith(`${DEFAULT_NAMES.prefix}.`) || subject.startsWith('bare.')) && kind)
    return `publish to ${kind} ${reply ? 'with an answer' : 'without an answer'}`;
  return null;
}

/** The pid of the nats-server that listens on `port`, found by its command line in /proc (Linux); undefined when none is. */
function serverPid(port: number): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (argv[0]?.endsWith('nats-server') && argv[argv.indexOf('-p') + 1] === String(port)) return Number(entry);
    } catch {
      // A process that ended meanwhile.
    }
  }
  return undefined;
}

const server = await startNatsServer();
const natsPid = serverPid(server.port);
let nc: NatsConnection | undefined;
let runners: LineChild[] = [];
try {
  await compilePeers();
  nc = await connect({ servers: server.url });
  const { jsm } = await ensureStreams(nc);
  const js = jetstream(nc);
  if (values.bare) {
    await jsm.streams.add({ name: BARE, subjects: ['bare.tasks.>'], retention: RetentionPolicy.Workqueue, storage: StorageType.File });
    await jsm.consumers.add(BARE, { durable_name: 'bare', ack_policy: AckPolicy.Explicit, filter_subject: 'bare.tasks.work' });
  }
  runners = Array.from({ length: AGENTS }, (_, i) => {
    const args = values.bare
      ? nodeArgs(peer('bare-js-consumer.ts'), ['--server', server.url, '--stream', BARE, '--consumer', 'bare', '--batch', '8'])
      : nodeArgs(peer('durable-runner.ts'), durableRunnerArgs(server.url, i));
    const profiling = values.profile ? ['--cpu-prof', `--cpu-prof-dir=${values.profile}`] : [];
    return watchLines(spawn(process.execPath, [...profiling, ...args], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] }));
  });
  await Promise.all(runners.map((r, i) => r.line((l) => l === 'ready', 60_000, `runner ${i} starting`)));
  let next = 0;
  let published = 0;
  /** TAP: a durable task; the floor: the record text of one, published as it is. */
  const submit = async (): Promise<unknown> => {
    const draft = { task_id: `task-20260101-${(next++).toString(16).padStart(12, '0')}`, next_phase: 'bench.work', input: echoInput(next) };
    if (!values.bare) return submitDurable(nc!, draft);
    await js.publish('bare.tasks.work', JSON.stringify(recordFromDraft(draft)), { msgID: `bare-${next}` });
    return published++;
  };
  const stored = async () => (await jsm.streams.info(DEFAULT_NAMES.results)).state.messages;
  /** Whether `count` more tasks than at `base` are done: TAP's finished records stored, the floor's queue empty. */
  const doneAfter = async (base: number, count: number): Promise<boolean> =>
    values.bare ? published >= base + count && (await jsm.streams.info(BARE)).state.messages === 0 : (await stored()) >= base + count;
  /** Submits `count` tasks 64 at a time, then waits until `until` says they are done. */
  const batch = async (count: number, until: () => Promise<boolean>): Promise<number> => {
    const t0 = performance.now();
    for (let i = 0; i < count; i += DEPTH) await Promise.all(Array.from({ length: Math.min(DEPTH, count - i) }, submit));
    while (!(await until())) await delay(5);
    return (performance.now() - t0) / 1000;
  };
  await batch(warm, () => doneAfter(0, warm));

  // The first pass: counts, the results' completion seen by the counting subscription itself.
  const counter = await connect({ servers: server.url });
  const counts = new Map<string, number>();
  let results = 0;
  counter.subscribe('>', {
    callback: (_err, m) => {
      const kind = kindOf(m.subject, m.data, m.reply);
      if (kind) counts.set(kind, (counts.get(kind) ?? 0) + 1);
      // A task is done at its finished record (TAP) or its acknowledgement (the floor).
      if (values.bare ? m.subject.startsWith('$JS.ACK.') : m.subject.startsWith(`${DEFAULT_NAMES.prefix}.results.`)) results++;
    },
  });
  await counter.flush();
  await batch(n, async () => results >= n);
  await delay(200);
  await counter.close();
  const perTask = (c: number) => (c / n).toFixed(2);
  const lines = [...counts].sort((a, b) => b[1] - a[1]);
  const total = (p: (k: string) => boolean) => lines.filter(([k]) => !k.startsWith('delivery') && p(k)).reduce((s, [, c]) => s + c, 0);
  console.log(`${n} tasks after a warm-up of ${warm}; messages clients sent, per task:`);
  for (const [kind, c] of lines) console.log(`  ${perTask(c).padStart(6)}  ${kind}`);
  console.log(`  ${perTask(total((k) => k.startsWith('request '))).padStart(6)}  $JS.API requests in all`);
  console.log(
    `  ${perTask(total((k) => k.endsWith('with an answer') || k.startsWith('request '))).padStart(6)}  requests the server answers in all`,
  );

  // The second pass: CPU, without the counting subscription.
  const base = values.bare ? published : await stored();
  const cpu0 = runners.map((r) => childCpuUs(r.child.pid!) ?? Number.NaN);
  const own0 = ownCpuUs();
  const server0 = natsPid === undefined ? null : childCpuUs(natsPid);
  const seconds = await batch(n, () => doneAfter(base, n));
  const own = (ownCpuUs() - own0) / 1e6;
  const serverCpu = server0 === null ? Number.NaN : ((childCpuUs(natsPid!) ?? Number.NaN) - server0) / 1e6;
  const run = runners.reduce((s, r, i) => s + ((childCpuUs(r.child.pid!) ?? Number.NaN) - cpu0[i]!), 0) / 1e6;
  const per1000 = (s: number) => ((s * 1000) / n).toFixed(2);
  console.log(
    `CPU-seconds per 1,000 tasks: runners ${per1000(run)} (all ${AGENTS}), requester ${per1000(own)}, nats-server ${per1000(serverCpu)}; ${Math.round(n / seconds)} tasks/s`,
  );
} finally {
  await Promise.all(runners.map((r) => r.stop(2000)));
  await nc?.close().catch(() => {});
  await server.stop();
}
