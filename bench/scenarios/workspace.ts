/**
 * Scenario 6, workspace: tasks claimed and completed per second by four workspace agent processes
 * racing over the same pending/ folder, against four bare processes making the same two renames
 * per task (claim, complete) with nothing else. The tasks are staged beforehand and moved into
 * pending/ once every racer is ready; the clock runs until completed/ holds them all.
 */
import { accessSync, constants, promises as fsp } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { delay, spawnScript, type LineChild } from '../lib/children.ts';
import type { Budget } from '../lib/options.ts';
import { peer } from '../lib/paths.ts';
import { compare, missingBaseline, notRun, ratioRange, type Row } from '../lib/report.ts';
import { spread } from '../lib/stats.ts';
import { oneLine } from './roundtrip.ts';

const ID = 'workspace.race';
const RACERS = 4;
const TIMEOUT_MS = 180_000;

/** The workspace target. */
const WORKSPACE_TARGET = 'Four workspace agents at least 0.25× the bare renames';

export function workspaceRowIds(): string[] {
  return [ID];
}

/** tmpfs when there is one (as the binding's own tests use), else the OS temp dir. */
function scratchBase(): string {
  try {
    accessSync('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
}

/** Moves every staged file into `pending`, then waits until `completed` holds `n` entries; the seconds it took. */
async function race(staged: string, pending: string, completed: string, n: number): Promise<number> {
  const names = await fsp.readdir(staged);
  const t0 = performance.now();
  for (const name of names) await fsp.rename(join(staged, name), join(pending, name));
  const stop = t0 + TIMEOUT_MS;
  for (;;) {
    const done = (await fsp.readdir(completed)).filter((f) => f.endsWith('.tap.json')).length;
    if (done >= n) break;
    if (performance.now() > stop) throw new Error(`only ${done} of ${n} tasks completed within ${TIMEOUT_MS / 1000} s`);
    await delay(2);
  }
  return (performance.now() - t0) / 1000;
}

async function startRacers(script: string, argsOf: (i: number) => string[]): Promise<LineChild[]> {
  const children = Array.from({ length: RACERS }, (_, i) => spawnScript(peer(script), argsOf(i)));
  try {
    await Promise.all(children.map((c, i) => c.line((l) => l === 'ready', 60_000, `racer ${i} starting`)));
  } catch (err) {
    await Promise.all(children.map((c) => c.stop(1000)));
    throw err;
  }
  return children;
}

/** One race of the workspace agents; tasks per second. */
async function tapRace(base: string, n: number): Promise<{ rate: number; recordBytes: number }> {
  const ws = await import('../../dist/reference/workspace/index.js');
  const root = await fsp.mkdtemp(join(base, 'tap-bench-ws-'));
  const stagingRoot = await fsp.mkdtemp(join(base, 'tap-bench-stage-'));
  let racers: LineChild[] = [];
  try {
    const { workspace } = await ws.initWorkspace(root, { claim_mode: 'rename', lease_ms: 10_000 });
    const { workspace: staging } = await ws.initWorkspace(stagingRoot, { claim_mode: 'rename', lease_ms: 10_000 });
    for (let i = 0; i < n; i++)
      await ws.submitTask(staging, { task_id: `t${String(i).padStart(5, '0')}`, next_phase: 'work', input: { i } });
    const first = join(staging.paths.dir('pending'), (await fsp.readdir(staging.paths.dir('pending')))[0]!);
    const recordBytes = (await fsp.stat(first)).size;
    racers = await startRacers('workspace-agent.ts', (i) => ['--workspace', root, '--agent-id', `racer-${i}`]);
    const seconds = await race(staging.paths.dir('pending'), workspace.paths.dir('pending'), workspace.paths.dir('completed'), n);
    return { rate: n / seconds, recordBytes };
  } finally {
    await Promise.all(racers.map((c) => c.stop(2000)));
    await fsp.rm(root, { recursive: true, force: true });
    await fsp.rm(stagingRoot, { recursive: true, force: true });
  }
}

/** One race of the bare renamers over files of the same size; tasks per second. */
async function bareRace(base: string, n: number, recordBytes: number): Promise<number> {
  const root = await fsp.mkdtemp(join(base, 'tap-bench-bare-'));
  let racers: LineChild[] = [];
  try {
    for (const d of ['pending', 'processing', 'completed', 'staged']) await fsp.mkdir(join(root, d));
    const body = Buffer.alloc(recordBytes, 0x20);
    for (let i = 0; i < n; i++) await fsp.writeFile(join(root, 'staged', `t${String(i).padStart(5, '0')}.tap.json`), body);
    racers = await startRacers('bare-racer.ts', () => ['--root', root]);
    const seconds = await race(join(root, 'staged'), join(root, 'pending'), join(root, 'completed'), n);
    return n / seconds;
  } finally {
    await Promise.all(racers.map((c) => c.stop(2000)));
    await fsp.rm(root, { recursive: true, force: true });
  }
}

export async function workspace(budget: Budget, _selected: (id: string) => boolean, log: (line: string) => void): Promise<Row[]> {
  const n = budget.workspaceTasks;
  const base = scratchBase();
  log(`workspace: ${RACERS} agents racing over ${n} tasks in ${base}`);
  const row = {
    id: ID,
    scenario: '6. Workspace binding',
    title: `${RACERS} agent processes racing over ${n.toLocaleString('en-US')} tasks`,
    unit: 'tasks/s',
    better: 'higher' as const,
    method: `tasks staged, then moved into pending/ once all ${RACERS} racers are ready; time until completed/ holds every task; scratch folder on ${base}; ${budget.workspaceReps} repetitions, fresh folders and processes each`,
  };
  const tapRuns: number[] = [];
  const bareRuns: number[] = [];
  let bareError: string | undefined;
  let recordBytes = 600;
  try {
    await import('../../dist/reference/workspace/index.js');
  } catch (err) {
    return [notRun(row, `the workspace binding cannot be loaded: ${oneLine(err)}`, [WORKSPACE_TARGET])];
  }
  for (let rep = 0; rep < budget.workspaceReps; rep++) {
    try {
      const r = await tapRace(base, n);
      tapRuns.push(r.rate);
      recordBytes = r.recordBytes;
    } catch (err) {
      return [notRun(row, `the workspace race failed: ${oneLine(err)}`, [WORKSPACE_TARGET])];
    }
    try {
      bareRuns.push(await bareRace(base, n, recordBytes));
    } catch (err) {
      bareError = oneLine(err);
    }
    log(
      `  repetition ${rep + 1}/${budget.workspaceReps}: workspace ${Math.round(tapRuns.at(-1)!)} tasks/s, bare renames ${Math.round(bareRuns.at(-1) ?? NaN)} tasks/s`,
    );
  }
  const tap = { name: `TAP workspace binding (${RACERS} agents)`, value: spread(tapRuns) };
  const floorName = `bare renames pending → processing → completed (${RACERS} processes)`;
  const baseline =
    bareError || bareRuns.length === 0
      ? missingBaseline('bare', floorName, bareError ?? 'no figure')
      : compare(tap, 'bare', { name: floorName, value: spread(bareRuns) });
  const targets =
    baseline.ratio === null
      ? [{ text: WORKSPACE_TARGET, measured: 'bare renames not measured', met: null }]
      : [
          {
            text: WORKSPACE_TARGET,
            measured: `${baseline.ratio.toFixed(2)}× the bare renames (${ratioRange(tap.value, baseline.value)})`,
            met: baseline.ratio >= 0.25,
          },
        ];
  return [{ ...row, tap, baselines: [baseline], targets, details: { record_bytes: recordBytes } }];
}
