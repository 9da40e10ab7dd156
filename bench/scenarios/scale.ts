/**
 * Scenario 5, scale: the resident memory of the reference agent (a child process over stdio)
 * holding n open tap.test.sleep tasks, against the same agent idle after its handshake; and the
 * time for n concurrent WebSocket sessions to complete the TAP handshake against an agent in a
 * child process, against n bare ws connections each making the same two round trips.
 */
import type { TapClient } from '../../dist/reference/client/index.js';
import { connectWebSocket, spawnStdioTransport } from '../../dist/reference/transports/index.js';
import { delay, rssOf, within } from '../lib/children.ts';
import type { Budget } from '../lib/options.ts';
import { peer, ROOT } from '../lib/paths.ts';
import { compare, missingBaseline, notRun, type Row } from '../lib/report.ts';
import { spread } from '../lib/stats.ts';
import { bareStdio, echoInput, listeningChild, openBareSocket, tapConnect } from '../lib/systems.ts';
import { nodeArgs } from '../lib/children.ts';
import { oneLine } from './roundtrip.ts';

const SCENARIO = '5. Scale';
const MB = 1024 * 1024;

export function scaleRowIds(): string[] {
  return ['scale.open-tasks', 'scale.ws-handshakes'];
}

export async function scale(budget: Budget, selected: (id: string) => boolean, log: (line: string) => void): Promise<Row[]> {
  const rows: Row[] = [];
  if (selected('scale.open-tasks')) rows.push(await openTasks(budget, log));
  if (selected('scale.ws-handshakes')) rows.push(await handshakes(budget, log));
  return rows;
}

/**
 * How long the open-task row waits for the agent's resident memory to settle after the burst that
 * opened its tasks: V8 returns the pages the burst's garbage took some 15–40 s after the heap goes
 * quiet (its memory reducer), on this machine.
 */
const SETTLE_MS = 45_000;

/**
 * The RSS of `pid` once it settled: read every second until it fell by a tenth from `burst` and
 * then held within 2 % for a second, or until `withinMs` passed (the last reading then).
 */
async function settledRss(pid: number, burst: number, withinMs: number): Promise<number> {
  const end = performance.now() + withinMs;
  let last = burst;
  while (performance.now() < end) {
    await delay(1000);
    const now = rssOf(pid) ?? last;
    if (now < burst * 0.9 && Math.abs(now - last) <= last * 0.02) return now;
    last = now;
  }
  return last;
}

/**
 * One agent: RSS idle after the handshake, then with `n` sleeping tasks accepted: just after the
 * burst that opened them, and once settled (`settleMs`).
 */
async function holdTasks(n: number, settleMs: number): Promise<{ idle: number; burst: number; held: number }> {
  const transport = spawnStdioTransport(process.execPath, nodeArgs(peer('tap-agent.ts'), ['--max-tasks', String(n + 100)]), {
    cwd: ROOT,
    stderr: 'pipe',
    closeGraceMs: 2000,
  });
  let client: TapClient | undefined;
  try {
    client = await tapConnect(transport, n + 100);
    const pid = transport.child!.pid!;
    // Settle: a few echo tasks, then a pause, so that the idle figure is the agent ready to work.
    for (let i = 0; i < 20; i++) await client.submit('tap.test.echo', echoInput(i)).result;
    await delay(500);
    const idle = rssOf(pid);
    if (idle === null) throw new Error('cannot read the resident memory of the agent (no /proc)');
    const handles = Array.from({ length: n }, () => client!.submit('tap.test.sleep', { ms: 3_000_000 }));
    await within(Promise.all(handles.map((h) => h.accepted)), 120_000, `accepting ${n} tasks`);
    const stats = await client.status(handles[n - 1]!.taskId);
    if (stats.state !== 'running' && stats.state !== 'accepted') throw new Error(`the last task is ${stats.state}, not open`);
    await delay(500);
    const burst = rssOf(pid)!;
    return { idle, burst, held: await settledRss(pid, burst, settleMs) };
  } finally {
    transport.kill('SIGKILL');
    await within(transport.exited, 5000, 'the agent exiting').catch(() => {});
  }
}

/** The RSS of a bare NDJSON echo process (same Node, compiled like the agent) after a few echoes: the floor of any agent process. */
async function floorRss(): Promise<number> {
  const bare = await bareStdio();
  try {
    for (let i = 0; i < 20; i++) await bare.call(i);
    await delay(500);
    const rss = rssOf(bare.pid!);
    if (rss === null) throw new Error('cannot read the resident memory of the process (no /proc)');
    return rss;
  } finally {
    await bare.close();
  }
}

async function openTasks(budget: Budget, log: (line: string) => void): Promise<Row> {
  const n = budget.openTasks;
  log(`scale: ${n} open tasks`);
  const target = '10,000 open tasks under 150 MB resident';
  // Settling takes tens of seconds: only a run that holds the target's 10,000 tasks waits for it.
  const settleMs = n >= 10_000 ? SETTLE_MS : 0;
  const base = {
    id: 'scale.open-tasks',
    scenario: SCENARIO,
    title: `agent RSS holding ${n.toLocaleString('en-US')} open tap.test.sleep tasks`,
    unit: 'MB',
    better: 'lower' as const,
    method: `RSS (VmRSS) of the agent process over stdio holding all ${n} tasks once accepted: the figure once it settled (read every second until it fell by a tenth and held, at most ${settleMs / 1000} s: V8 returns the pages of the burst's garbage only after the heap has been quiet a while), and beside it the RSS 0.5 s after the last acceptance; against the same process idle after its handshake and 20 echo tasks; ${budget.scaleReps} repetitions, a fresh agent each`,
  };
  const idle: number[] = [];
  const burst: number[] = [];
  const held: number[] = [];
  const floor: number[] = [];
  let floorError: string | undefined;
  for (let rep = 0; rep < budget.scaleReps; rep++) {
    try {
      const r = await holdTasks(n, settleMs);
      idle.push(r.idle / MB);
      burst.push(r.burst / MB);
      held.push(r.held / MB);
    } catch (err) {
      return notRun(base, oneLine(err), n >= 10_000 ? [target] : []);
    }
    try {
      floor.push((await floorRss()) / MB);
    } catch (err) {
      floorError = oneLine(err);
    }
    log(
      `  repetition ${rep + 1}/${budget.scaleReps}: idle ${idle.at(-1)!.toFixed(1)} MB, holding ${held.at(-1)!.toFixed(1)} MB settled (${burst.at(-1)!.toFixed(1)} MB just after the burst), bare process ${floor.at(-1)?.toFixed(1) ?? '–'} MB`,
    );
  }
  const tap = { name: `TAP agent holding ${n} open tasks`, value: spread(held), extra: { burst_mb: spread(burst) } };
  const baseline = compare(tap, 'idle', { name: 'the same agent idle after its handshake', value: spread(idle) });
  const floorName = 'a bare NDJSON echo process, same Node, plain JavaScript (floor)';
  const process =
    floorError || floor.length === 0
      ? missingBaseline('bare-process', floorName, floorError ?? 'no figure')
      : compare(tap, 'bare-process', { name: floorName, value: spread(floor) });
  const perTask = ((tap.value.median - baseline.value.median) * MB) / n;
  const targets =
    n >= 10_000
      ? [
          {
            text: target,
            measured: `${tap.value.median.toFixed(0)} MB settled (${tap.value.min.toFixed(0)}–${tap.value.max.toFixed(0)}); ${tap.extra.burst_mb.median.toFixed(0)} MB just after the burst that opened them`,
            met: tap.value.median < 150,
          },
        ]
      : [{ text: target, measured: `only ${n} tasks in this mode`, met: null }];
  return { ...base, tap, baselines: [baseline, process], targets, details: { bytes_per_open_task: Math.round(perTask) } };
}

/** Opens `n` TAP sessions at once against an agent in a child process; resolves with the seconds it took. */
async function tapHandshakes(n: number): Promise<number> {
  // Every session comes from 127.0.0.1: the agent's table holds them all, in all and for that one source.
  const agent = await listeningChild(
    peer('tap-agent.ts'),
    ['--listen', 'ws://127.0.0.1:0', '--max-connections', String(n + 16)],
    'the TAP agent',
  );
  const clients: TapClient[] = [];
  try {
    const t0 = performance.now();
    await within(
      Promise.all(
        Array.from({ length: n }, async () => {
          clients.push(await tapConnect(await connectWebSocket(agent.url, { handshakeTimeout: 60_000 }), 1));
        }),
      ),
      120_000,
      `${n} TAP handshakes`,
    );
    return (performance.now() - t0) / 1000;
  } finally {
    await agent.child.stop(1000);
    await Promise.all(clients.map((c) => within(c.close(), 2000, 'close').catch(() => {})));
  }
}

/** Opens `n` bare ws connections at once, each making two echo round trips (as many as the TAP handshake). */
async function bareHandshakes(n: number): Promise<number> {
  const server = await listeningChild(peer('bare-ws.ts'), [], 'the bare ws server');
  const sockets: Array<{ terminate(): void }> = [];
  try {
    const t0 = performance.now();
    await within(
      Promise.all(
        Array.from({ length: n }, async (_, k) => {
          const ws = await openBareSocket(server.url);
          sockets.push(ws);
          for (let i = 0; i < 2; i++) {
            await new Promise<void>((resolve) => {
              ws.once('message', (data) => {
                JSON.parse(data.toString());
                resolve();
              });
              ws.send(JSON.stringify({ id: k * 2 + i, payload: echoInput(i) }));
            });
          }
        }),
      ),
      120_000,
      `${n} bare connections`,
    );
    return (performance.now() - t0) / 1000;
  } finally {
    for (const s of sockets) s.terminate();
    await server.child.stop(1000);
  }
}

async function handshakes(budget: Budget, log: (line: string) => void): Promise<Row> {
  const n = budget.sessions;
  log(`scale: ${n} concurrent WebSocket sessions`);
  const base = {
    id: 'scale.ws-handshakes',
    scenario: SCENARIO,
    title: `${n.toLocaleString('en-US')} concurrent WebSocket sessions completing the handshake`,
    unit: 's',
    better: 'lower' as const,
    method: `wall time from the first connect until every session is open (WebSocket upgrade with subprotocol tap.v1, then handshake.init → ack → ready → go), all started at once from one process against an agent in a child; the floor opens as many ws connections and makes two echo round trips on each; ${budget.scaleReps} repetitions, fresh servers each`,
  };
  const tapRuns: number[] = [];
  const bareRuns: number[] = [];
  let bareError: string | undefined;
  for (let rep = 0; rep < budget.scaleReps; rep++) {
    try {
      tapRuns.push(await tapHandshakes(n));
    } catch (err) {
      return notRun(base, oneLine(err));
    }
    try {
      bareRuns.push(await bareHandshakes(n));
    } catch (err) {
      bareError = oneLine(err);
    }
    log(`  repetition ${rep + 1}/${budget.scaleReps}: TAP ${tapRuns.at(-1)!.toFixed(2)} s, floor ${bareRuns.at(-1)?.toFixed(2) ?? '–'} s`);
  }
  const tap = { name: `TAP sessions (reference client + agent)`, value: spread(tapRuns) };
  const floorName = 'bare ws connections with two echo round trips (floor)';
  const baseline =
    bareError || bareRuns.length === 0
      ? missingBaseline('bare', floorName, bareError ?? 'no figure')
      : compare(tap, 'bare', { name: floorName, value: spread(bareRuns) });
  return { ...base, tap, baselines: [baseline], targets: [] };
}
