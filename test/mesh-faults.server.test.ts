/**
 * Faults in a mesh (spec: mesh#moving, mesh#trace): 20 agents in four processes work through
 * 2,000 tasks, half of them with side effects (tap.test.counter), while two whole processes are
 * killed with SIGKILL at random moments. Every task ends exactly once; a task without side
 * effects always completes, moved if need be; a counter task completes or, when its agent died
 * holding it, ends indeterminate and is never moved; no counter runs twice, as the agents'
 * journals show; and every trace is complete.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connectMesh } from '../reference/mesh/connect.ts';
import type { Mesh } from '../reference/mesh/mesh.ts';
import type { TraceRecord } from '../reference/mesh/trace.ts';
import { traces } from '../reference/mesh/trace-view.ts';
import { natsServerInstalled, NO_NATS_SERVER, startNatsServer, type NatsServer } from '../reference/transports/nats/nats-server.testkit.ts';
import { compiledScript } from './compiled.testkit.ts';
import { lacks, needing } from './system-tools.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

const ROOT = resolve(import.meta.dirname, '..');
const HOSTS = 4;
const PER_HOST = 5;
const TASKS = 2000;
const IN_FLIGHT = 100;

interface HostProcess {
  child: ChildProcess;
  ids: string[];
  exited: Promise<void>;
}

function startHost(url: string, ids: string[], stateRoot: string): Promise<HostProcess> {
  const child = spawn(
    process.execPath,
    [
      compiledScript('reference/mesh/agent-host.ts'),
      '--nats',
      url,
      '--ids',
      ids.join(','),
      '--state-root',
      stateRoot,
      '--heartbeat-ms',
      '300',
      '--ttl-ms',
      '2100',
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolveHost, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.split('\n').includes('ready')) resolveHost({ child, ids, exited });
    });
    child.once('exit', (code) => reject(new Error(`the agent host exited (${code}) before it was ready: ${err}`)));
  });
}

/** The count each counter key reached in each agent's journal: the side effects as the agents recorded them. */
function journalCounts(stateRoot: string): Map<string, number> {
  const total = new Map<string, number>();
  for (const agent of readdirSync(stateRoot)) {
    const file = join(stateRoot, agent, 'journal.jsonl');
    if (!existsSync(file)) continue;
    const last = new Map<string, number>();
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!line.includes('"kv"')) continue;
      try {
        const r = JSON.parse(line) as { t?: string; key?: string; value?: unknown };
        if (r.t === 'kv' && typeof r.key === 'string' && typeof r.value === 'number') last.set(r.key, r.value);
      } catch {
        // A torn last line of a killed process.
      }
    }
    for (const [k, v] of last) total.set(k, (total.get(k) ?? 0) + v);
  }
  return total;
}

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'the mesh under faults (spec: mesh#moving, mesh#trace)'), () => {
  let server: NatsServer | undefined;
  const hosts: HostProcess[] = [];
  let mesh: Mesh | undefined;
  const stateRoot = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'tap-mesh-faults-'));

  afterAll(async () => {
    await mesh?.close();
    for (const h of hosts) {
      if (h.child.exitCode === null && h.child.signalCode === null) h.child.kill('SIGKILL');
      await h.exited;
    }
    await server?.stop();
    rmSync(stateRoot, { recursive: true, force: true });
  });

  it('2,000 tasks, two of four agent processes killed: one ending each, no side effect twice, every trace complete', {
    timeout: 60_000,
  }, async () => {
    const started = Date.now();
    server = await startNatsServer();
    const url = server.url;
    hosts.push(
      ...(await Promise.all(
        Array.from({ length: HOSTS }, (_, h) =>
          startHost(
            url,
            Array.from({ length: PER_HOST }, (_, i) => `fault.h${h}-a${i}`),
            stateRoot,
          ),
        ),
      )),
    );
    const records: TraceRecord[] = [];
    mesh = await connectMesh(url, { agentId: 'fault.coordinator', traceSink: (r) => records.push(r), maxAttempts: 8 });
    for (let i = 0; (await mesh.discover({ capability: 'tap.test.counter' })).length < HOSTS * PER_HOST; i++) {
      if (i > 100) throw new Error('the agents did not all join the mesh');
      await new Promise((r) => setTimeout(r, 50));
    }

    // Two whole processes die at random moments of the run.
    const killAt = [100 + Math.floor(Math.random() * 600), 800 + Math.floor(Math.random() * 600)];
    const killed = new Set<string>();
    const victims = [hosts[1]!, hosts[2]!];
    let done = 0;
    const outcomes: Array<{
      i: number;
      counter: boolean;
      status?: string;
      count?: number;
      indeterminate?: boolean;
      error?: string;
      agents: string[];
      traceId: string;
    }> = [];
    let next = 0;
    const m = mesh;
    const worker = async (): Promise<void> => {
      for (let i = next++; i < TASKS; i = next++) {
        const counter = i % 2 === 0;
        const task = counter
          ? await m.task('tap.test.counter', { key: `k${i}` })
          : await m.task('tap.test.sleep', { ms: 5 + Math.floor(Math.random() * 40) });
        const outcome: (typeof outcomes)[number] = { i, counter, agents: [], traceId: task.traceId };
        try {
          const result = await task.result;
          outcome.status = String(result.status);
          if (counter) outcome.count = (result.output as { count: number }).count;
        } catch (err) {
          outcome.error = (err as Error).message;
          outcome.indeterminate = (err as { indeterminate?: boolean }).indeterminate === true;
        }
        outcome.agents = task.hops.map((h) => h.agentId);
        outcomes.push(outcome);
        done++;
        for (const [k, at] of killAt.entries()) {
          if (done === at) {
            const victim = victims[k]!;
            for (const id of victim.ids) killed.add(id);
            victim.child.kill('SIGKILL');
          }
        }
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    const elapsed = Date.now() - started;

    // Exactly one ending per task.
    expect(outcomes.length).toBe(TASKS);
    expect(new Set(outcomes.map((o) => o.i)).size).toBe(TASKS);
    expect(killed.size).toBe(2 * PER_HOST);

    // Without side effects, every task completes, moved when its agent died.
    const plain = outcomes.filter((o) => !o.counter);
    expect(plain.filter((o) => o.status !== 'completed').map((o) => o.error)).toEqual([]);
    const moved = plain.filter((o) => o.agents.length > 1);

    // With side effects: completed with count 1, or indeterminate on a killed agent after one attempt.
    const counters = outcomes.filter((o) => o.counter);
    const lost = counters.filter((o) => o.status === undefined);
    expect(lost.filter((o) => !o.indeterminate || !killed.has(o.agents[o.agents.length - 1]!)).map((o) => o.error)).toEqual([]);
    expect(counters.filter((o) => o.status !== undefined && (o.status !== 'completed' || o.count !== 1))).toEqual([]);
    for (const o of lost) expect(new Set(o.agents).size === o.agents.length).toBe(true);

    // The agents' journals: no counter key ever went past 1, and every completed one reached it.
    const counts = journalCounts(stateRoot);
    const twice = [...counts].filter(([, n]) => n > 1);
    expect(twice).toEqual([]);
    for (const o of counters) if (o.status === 'completed') expect(counts.get(`tap.test.counter:k${o.i}`)).toBe(1);

    // Every trace is complete: each span has its ending.
    const all = traces(records);
    const incomplete = outcomes.map((o) => all.get(o.traceId)).filter((v) => !v || v.problems.length > 0);
    expect(incomplete.map((v) => v?.problems)).toEqual([]);

    console.log(
      `mesh faults: ${TASKS} tasks in ${elapsed} ms; killed ${[...killed].length} agents at tasks ${killAt.join(', ')}; ` +
        `${moved.length} moved, ${lost.length} indeterminate counter tasks, ${counts.size} counter keys in the journals`,
    );
  });
});
