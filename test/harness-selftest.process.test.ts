/**
 * tap-conform proves itself (spec: conformance#verdicts): every broken agent of
 * fixtures/agents/broken breaks exactly one rule, so the harness must FAIL the case that targets
 * that rule (exit status 1) and PASS a control case that has nothing to do with it; and the
 * reference agent, which the broken agents wrap, must PASS every targeted case, so each FAIL
 * comes from the break and not from the agent underneath.
 *
 * Every harness run is a child process (`node bin/tap-conform.mjs … --json <file>`); runs start
 * together and go a few at a time. TAP_SELFTEST_JOBS sets how many (default 8, whatever the CPU
 * count: most runs spend their time waiting for a reply that a broken agent never sends).
 * TAP_SELFTEST_TIME_SCALE sets the harness's --time-scale (default: from the load of the machine,
 * 1 when it is idle, at most 4). With TAP_SELFTEST_REPORT=<file> the verdicts observed are also
 * written to that file as JSON.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { judgeHistory } from '../conformance/judge/history.ts';
import type { Received } from '../conformance/peer.ts';
import { recovered } from '../conformance/runner.ts';
import { loadTimeScale } from '../conformance/test/time-scale.testkit.ts';
import { checkHistory } from '../reference/core/history.ts';
import { startListening } from '../tools/listening-agent.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CONFORM = join(ROOT, 'bin/tap-conform.mjs');
const REFERENCE = ['node', 'bin/tap-reference-agent.mjs'];
const MANIFEST_FILE = join(ROOT, 'fixtures/agents/broken/manifest.json');
const DEFAULT_CONTROL = 'core.handshake.complete';

interface Entry {
  name: string;
  command: string[];
  breaks: string;
  requirement: string;
  expected_case: string;
  /** A case unrelated to the break, which the agent must pass (default core.handshake.complete). */
  control_case?: string;
  /** "websocket": the command serves WebSocket sessions and prints its URL on stdout (default stdio). */
  binding?: 'stdio' | 'websocket';
}

interface CaseReport {
  id: string;
  verdict: string;
  detail: string;
  repeats?: string[];
}

interface Run {
  code: number | null;
  cases: Map<string, CaseReport>;
  stderr: string;
  /** Wall time of the harness run, for the self-test's own report. */
  ms?: number;
  /** Why there is no report, if there is none. */
  problem?: string;
  /** The folder of the run's wire transcripts (`--transcripts`), one file per case. */
  transcripts?: string;
}

const manifest = JSON.parse(readFileSync(MANIFEST_FILE, 'utf8')) as Entry[];
const requirementIds = new Set(
  (JSON.parse(readFileSync(join(ROOT, 'spec/1.0/requirements.json'), 'utf8')) as { requirements: { id: string }[] }).requirements.map(
    (r) => r.id,
  ),
);

const JOBS = Number(process.env.TAP_SELFTEST_JOBS) || 8;
const TIME_SCALE = loadTimeScale(4);
/** How long one harness run may take before it is killed (it bounds its own cases well below). */
const RUN_LIMIT_MS = 240_000 * TIME_SCALE;
/** What a test waits for its (already started) runs. */
const TEST_TIMEOUT_MS = 900_000 * TIME_SCALE;

const control = (e: Entry) => e.control_case ?? DEFAULT_CONTROL;

/** Runs at most `n` jobs at once. */
function limiter(n: number): <T>(job: () => Promise<T>) => Promise<T> {
  let active = 0;
  const queue: (() => void)[] = [];
  return async (job) => {
    if (active >= n) await new Promise<void>((r) => queue.push(r));
    active++;
    try {
      return await job();
    } finally {
      active--;
      queue.shift()?.();
    }
  };
}
const limit = limiter(JOBS);

let workDir = '';
let runCount = 0;
const spawned = new Set<ChildProcess>();

/** Runs tap-conform on `target` (a URL, or ["--", command…]) with only the given cases (and any other options). */
function conform(target: string[], only: string[], options: string[] = []): Promise<Run> {
  const json = join(workDir, `report-${++runCount}.json`);
  const transcripts = join(workDir, `transcripts-${runCount}`);
  const args = [
    CONFORM,
    ...only.flatMap((id) => ['--only', id]),
    ...options,
    '--transcripts',
    transcripts,
    '--json',
    json,
    '--no-color',
    '--time-scale',
    String(TIME_SCALE),
    ...target,
  ];
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    spawned.add(child);
    let stderr = '';
    child.stdout.resume();
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_LIMIT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      spawned.delete(child);
      try {
        const report = JSON.parse(readFileSync(json, 'utf8')) as { cases: CaseReport[] };
        resolve({ code, stderr, ms: Date.now() - started, cases: new Map(report.cases.map((c) => [c.id, c])), transcripts });
      } catch (err) {
        resolve({ code, stderr, cases: new Map(), problem: `no JSON report (${(err as Error).message})` });
      }
    });
  });
}

/** Starts a WebSocket agent and resolves with the URL it prints on stdout. */
async function startWebSocketAgent(command: string[]): Promise<{ url: string; child: ChildProcess }> {
  const agent = await startListening(command, { cwd: ROOT, timeoutMs: 60_000 * TIME_SCALE });
  spawned.add(agent.child);
  agent.child.on('exit', () => spawned.delete(agent.child));
  return agent;
}

/** Stops a process this test started: SIGTERM, then SIGKILL after 10 s. */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** Runs the harness on an agent given as in the manifest (stdio command or WebSocket server). */
async function conformAgent(command: string[], binding: Entry['binding'], only: string[]): Promise<Run> {
  if (binding !== 'websocket') return conform(['--', ...command], only);
  const agent = await startWebSocketAgent(command);
  try {
    return await conform([agent.url], only);
  } finally {
    await stop(agent.child);
  }
}

function listCases(): Promise<Set<string>> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [CONFORM, '--list', '--no-color'], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 }, (err, stdout) => {
      if (err) return reject(err);
      resolve(
        new Set(
          stdout
            .split('\n')
            .slice(1)
            .map((l) => l.split(/\s+/)[0]!)
            .filter((id) => /^[a-z]/.test(id) && id.includes('.')),
        ),
      );
    });
  });
}

/** One line per case of a run, for failure messages. */
function summary(run: Run): string {
  const lines = [...run.cases.values()].map((c) => `  ${c.id}: ${c.verdict} — ${c.detail}`);
  return [
    `exit ${run.code}${run.problem ? `, ${run.problem}` : ''}`,
    ...lines,
    `  stderr: ${run.stderr.trim().split('\n').slice(-3).join(' | ')}`,
  ].join('\n');
}

/** Writes what each run observed, for people reading the self-test's outcome. */
async function writeReport(file: string): Promise<void> {
  const settle = async (p: Promise<Run> | undefined) =>
    p ? p.catch((e: Error) => ({ code: null, cases: new Map(), stderr: '', problem: e.message }) as Run) : undefined;
  const verdict = (run: Run | undefined, id: string) =>
    run?.cases.get(id) ? { verdict: run.cases.get(id)!.verdict, detail: run.cases.get(id)!.detail } : { verdict: 'none' };
  const zoo = [];
  for (const e of manifest) {
    const run = await settle(zooRuns.get(e.name));
    zoo.push({
      name: e.name,
      requirement: e.requirement,
      exit: run?.code,
      ms: run?.ms,
      expected_case: e.expected_case,
      expected: verdict(run, e.expected_case),
      control_case: control(e),
      control: verdict(run, control(e)),
    });
  }
  const ref = [await settle(referenceStdio), await settle(referenceWebSocket)];
  const runs = {
    reference_stdio: ref[0]?.ms,
    reference_websocket: ref[1]?.ms,
    fast_shutdown: (await settle(fastShutdown))?.ms,
    fast_shutdown_stdio: (await settle(fastShutdownStdio))?.ms,
  };
  const reference = Object.fromEntries(
    ref.flatMap((r) => [...(r?.cases.values() ?? [])].map((c) => [c.id, { verdict: c.verdict, detail: c.detail }])),
  );
  writeFileSync(file, `${JSON.stringify({ time_scale: TIME_SCALE, jobs: JOBS, runs, zoo, reference }, null, 2)}\n`);
}

/**
 * A correct agent that hands off and says farewell at once after an approved shutdown.request
 * (fixtures/agents/fast-shutdown.mjs). Its shutdown profile runs FAST_SHUTDOWN_REPEAT times over
 * WebSocket, where one process serves every session, and FAST_SHUTDOWN_STDIO_REPEAT times over
 * stdio, where every case run starts two processes: the whole suite twenty times over would take
 * most of an hour, and the shutdown cases are the ones whose outcome depends on how fast the
 * agent ends its session.
 */
const FAST_SHUTDOWN = ['node', 'fixtures/agents/fast-shutdown.mjs'];
const FAST_SHUTDOWN_REPEAT = 20;
const FAST_SHUTDOWN_STDIO_REPEAT = 2;
let fastShutdown: Promise<Run>;
let fastShutdownStdio: Promise<Run>;

const zooRuns = new Map<string, Promise<Run>>();
let referenceStdio: Promise<Run>;
let referenceWebSocket: Promise<Run>;
let knownCases: Promise<Set<string>>;

beforeAll(() => {
  workDir = mkdtempSync(join(tmpdir(), 'tap-selftest-'));
  knownCases = listCases();
  const stdioTargets = [...new Set(manifest.filter((e) => e.binding !== 'websocket').map((e) => e.expected_case))];
  const wsTargets = [...new Set(manifest.filter((e) => e.binding === 'websocket').map((e) => e.expected_case))];
  // The longest runs first, so that the pool stays busy to the end.
  referenceStdio = limit(() => conform(['--', ...REFERENCE], stdioTargets));
  fastShutdown = limit(async () => {
    const agent = await startWebSocketAgent([...FAST_SHUTDOWN, '--listen']);
    try {
      return await conform([agent.url], [], ['--profile', 'shutdown', '--repeat', String(FAST_SHUTDOWN_REPEAT), '--jobs', '12']);
    } finally {
      await stop(agent.child);
    }
  });
  fastShutdownStdio = limit(() =>
    conform(['--', ...FAST_SHUTDOWN], [], ['--profile', 'shutdown', '--repeat', String(FAST_SHUTDOWN_STDIO_REPEAT), '--jobs', '6']),
  );
  referenceWebSocket = limit(() =>
    wsTargets.length
      ? conformAgent([...REFERENCE, '--listen', 'ws://127.0.0.1:0/tap'], 'websocket', wsTargets)
      : Promise.resolve({ code: 0, cases: new Map(), stderr: '' }),
  );
  for (const e of manifest)
    zooRuns.set(
      e.name,
      limit(() => conformAgent(e.command, e.binding, [e.expected_case, control(e)])),
    );
  // Settled here too, so that a failing run never surfaces as an unhandled rejection.
  for (const p of [knownCases, referenceStdio, referenceWebSocket, fastShutdown, fastShutdownStdio, ...zooRuns.values()]) p.catch(() => {});
});

afterAll(async () => {
  await Promise.all([...spawned].map((c) => stop(c)));
  if (process.env.TAP_SELFTEST_REPORT) await writeReport(process.env.TAP_SELFTEST_REPORT);
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

describe('the broken-agent manifest (fixtures/agents/broken/manifest.json)', () => {
  it('lists at least 18 agents under distinct names', () => {
    expect(manifest.length).toBeGreaterThanOrEqual(18);
    expect(new Set(manifest.map((e) => e.name)).size).toBe(manifest.length);
  });

  it.each(manifest.map((e) => [e.name, e] as const))(
    '%s is an executable node script with a rule, a requirement id and cases the harness has',
    async (_name, e) => {
      expect(e.command[0]).toBe('node');
      const file = join(ROOT, e.command[1]!);
      accessSync(file, constants.X_OK);
      expect(readFileSync(file, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
      expect(e.breaks.length).toBeGreaterThan(10);
      expect(requirementIds.has(e.requirement), `${e.requirement} is not in spec/1.0/requirements.json`).toBe(true);
      const cases = await knownCases;
      expect(cases.has(e.expected_case), `tap-conform has no case ${e.expected_case}`).toBe(true);
      expect(cases.has(control(e)), `tap-conform has no case ${control(e)}`).toBe(true);
      expect(control(e)).not.toBe(e.expected_case);
    },
    TEST_TIMEOUT_MS,
  );
});

describe('each broken agent is failed by the case that targets its rule, and only by it', () => {
  it.each(manifest.map((e) => [e.name, e] as const))(
    '%s',
    async (_name, e) => {
      const run = await zooRuns.get(e.name)!;
      const why = `${e.name} (${e.breaks}):\n${summary(run)}`;
      expect(run.cases.get(e.expected_case)?.verdict, why).toBe('FAIL');
      expect(run.cases.get(control(e))?.verdict, why).toBe('PASS');
      expect(run.code, why).toBe(1);
    },
    TEST_TIMEOUT_MS,
  );
});

describe('the reference agent passes every case the broken agents are failed by', () => {
  it(
    'over stdio',
    async () => {
      const run = await referenceStdio;
      const targets = [...new Set(manifest.filter((e) => e.binding !== 'websocket').map((e) => e.expected_case))];
      const notPassed = targets.filter((id) => run.cases.get(id)?.verdict !== 'PASS');
      expect(notPassed, summary(run)).toEqual([]);
      expect(run.code, summary(run)).toBe(0);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'over WebSocket',
    async () => {
      const run = await referenceWebSocket;
      const targets = [...new Set(manifest.filter((e) => e.binding === 'websocket').map((e) => e.expected_case))];
      const notPassed = targets.filter((id) => run.cases.get(id)?.verdict !== 'PASS');
      expect(notPassed, summary(run)).toEqual([]);
      expect(run.code, summary(run)).toBe(0);
    },
    TEST_TIMEOUT_MS,
  );
});

/** Every shutdown case passed each of `repeat` runs (a case of another binding is skipped each time). */
function expectEveryRunPassed(run: Run, repeat: number): void {
  const why = summary(run);
  expect(run.code, why).toBe(0);
  const cases = [...run.cases.values()];
  expect(cases.length, why).toBeGreaterThanOrEqual(10);
  for (const c of cases) {
    expect(c.repeats, `${c.id}: ${why}`).toHaveLength(repeat);
    const expected = c.verdict === 'SKIPPED' && / binding only$/.test(c.detail) ? 'SKIPPED' : 'PASS';
    expect(c.repeats, `${c.id}: ${c.detail}`).toEqual(Array(repeat).fill(expected));
  }
  // The agent did win the race these cases used to lose: its farewell came before the replies.
  for (const id of ['shutdown.refuses-new-work', 'shutdown.decision-refused'])
    expect(run.cases.get(id)?.detail, why).toMatch(/said farewell (before answering|first)/);
}

describe('a correct agent that hands off and says farewell at once', () => {
  it(
    `passes every shutdown case in ${FAST_SHUTDOWN_REPEAT} runs out of ${FAST_SHUTDOWN_REPEAT} over WebSocket (spec: shutdown#shutdown-sequence, TAP-SHUT-007, TAP-SHUT-011)`,
    async () => {
      const run = await fastShutdown;
      expectEveryRunPassed(run, FAST_SHUTDOWN_REPEAT);
      // Over WebSocket no case is left to another binding.
      expect([...run.cases.values()].filter((c) => c.verdict !== 'PASS').map((c) => c.id)).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    `passes every shutdown case in ${FAST_SHUTDOWN_STDIO_REPEAT} runs out of ${FAST_SHUTDOWN_STDIO_REPEAT} over stdio, where the session ends with the process`,
    async () => {
      const run = await fastShutdownStdio;
      expectEveryRunPassed(run, FAST_SHUTDOWN_STDIO_REPEAT);
      // The one case of the WebSocket binding is skipped over stdio; every other run passes.
      expect([...run.cases.values()].filter((c) => c.verdict === 'SKIPPED').map((c) => c.id)).toEqual(['shutdown.scope.one-session']);
    },
    TEST_TIMEOUT_MS,
  );
});

type Msg = Record<string, unknown>;

/**
 * Each session's messages from the agent in a case's wire transcript, as received and as
 * recovered by resume: the lines the harness read (`dir: "in"`), grouped by the session each
 * names (by connection before the session exists).
 */
function agentSessions(file: string): unknown[][] {
  const by = new Map<unknown, Msg[]>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const entry = JSON.parse(line) as { dir: string; conn?: number; text?: string };
    if (entry.dir !== 'in' || entry.text === undefined) continue;
    let msg: unknown;
    try {
      msg = JSON.parse(entry.text);
    } catch {
      continue;
    }
    if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) continue;
    const key = (msg as Msg).session_id ?? `conn ${entry.conn}`;
    by.set(key, [...(by.get(key) ?? []), msg as Msg]);
  }
  return [...by.values()].flatMap((list) => [list, recovered(list.map((msg) => ({ msg }) as Received))]);
}

const verdicts = (v: readonly { index: number; task_id?: string; rule: string }[]) =>
  v.map((x) => `${x.index} ${x.task_id ?? '-'} ${x.rule}`).sort();

/**
 * The harness's judge (conformance/judge/history.ts) and the reference's history checker
 * (reference/core/history.ts) were written apart: over what the broken agents really sent in the
 * runs above, they must reach the same verdicts, rule for rule and message for message.
 */
describe('the harness judge agrees with the reference checker on what broken agents send', () => {
  it(
    'over the targeted case of every stdio agent of fixtures/agents/broken',
    async () => {
      const failed: string[] = [];
      let histories = 0;
      for (const e of manifest.filter((x) => x.binding !== 'websocket')) {
        const run = await zooRuns.get(e.name)!;
        const file = join(run.transcripts ?? '', `${e.expected_case}.ndjson`);
        expect(existsSync(file), `${e.name}: no transcript of ${e.expected_case}\n${summary(run)}`).toBe(true);
        for (const msgs of agentSessions(file)) {
          histories++;
          const theirs = verdicts(checkHistory(msgs));
          const ours = verdicts(judgeHistory(msgs));
          if (JSON.stringify(theirs) !== JSON.stringify(ours)) failed.push(`${e.name} ${e.expected_case}: ${ours} vs ${theirs}`);
        }
      }
      expect(failed).toEqual([]);
      expect(histories).toBeGreaterThan(manifest.length);
    },
    TEST_TIMEOUT_MS,
  );
});
