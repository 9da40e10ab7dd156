/**
 * The mutation score of tap-conform (spec: conformance#traceability): runs the suite against
 * mutants of the reference agent, each breaking one requirement (conformance/mutation/mutants.ts),
 * and reports how many it catches, and how many a case that cites the broken requirement catches.
 *
 * Each mutant runs in this process on an in-memory transport pair (those of the stdio binding as
 * processes of conformance/mutation/broken-agent.ts, compiled in dist/); the cases run against it are
 * those that cite its requirement and the other cases of their profiles (--scope citing: only the
 * citing ones). A case that fails against the unbroken agent is left out of every verdict. Two
 * mutants run at a time (--jobs). Writes a table to stdout and JSON to --json (default
 * mutation-report.json); exits 1 when a mutant survives without a written reason (an entry
 * { id, mutant, reason } of conformance/untestable.json), 2 on a usage error.
 *
 *   npx tsx tools/mutation.ts [--only <glob>] [--scope citing|profile] [--jobs n] [--json file]
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { type Agent, CONFORMANCE_EXTENSION, createAgent, withConformanceCapabilities } from '../reference/agent/index.ts';
import { createMemoryPair } from '../reference/transports/memory.ts';
import type { Case } from '../conformance/case.ts';
import { ALL_CASES } from '../conformance/cases/index.ts';
import type { RunEnv } from '../conformance/context.ts';
import { b64u, newKey } from '../conformance/mac.ts';
import { FIRED, mutateTransport } from '../conformance/mutation/layer.ts';
import { MUTANTS, type Mutant } from '../conformance/mutation/mutants.ts';
import { probe } from '../conformance/probe.ts';
import { runCases } from '../conformance/runner.ts';
import { type Connection, MAX_TASK_VAR, type OpenOptions, STATE_PLACEHOLDER, type TargetSpec } from '../conformance/target.ts';
import { globMatch } from '../conformance/options.ts';
import { repoPath } from '../conformance/paths.ts';

/** The verdict of the suite on one mutant. */
export interface MutantResult {
  id: string;
  requirement: string;
  breaks: string;
  /** Cases that failed against the mutant and passed against the unbroken agent. */
  failed: string[];
  /** Those of them that cite the broken requirement. */
  citing: string[];
  /** Cases that cite the requirement and were run. */
  ran_citing: string[];
  caught: boolean;
  caught_by_citing: boolean;
  /** How many messages the mutation changed (in memory only; null over stdio, where it runs in the broken agent's process). */
  fired: number | null;
  ms: number;
}

export interface MutationReport {
  mutants: number;
  caught: number;
  caught_by_citing: number;
  score: number;
  citing_score: number;
  survivors: string[];
  /** Survivors with a written reason in conformance/untestable.json ({ id, mutant, reason }). */
  explained: { mutant: string; reason: string }[];
  /** Survivors with neither a catching case nor a written reason. */
  unexplained: string[];
  /** Cases left out because the unbroken agent fails them too. */
  unstable: string[];
  results: MutantResult[];
}

export interface MutationOptions {
  only?: string[];
  scope?: 'citing' | 'profile';
  jobs?: number;
  /** Stretch every timing tolerance of the cases (default 1). */
  timeScale?: number;
  /** Step timeout of the harness in ms (default 4000). */
  stepTimeoutMs?: number;
  onResult?: (r: MutantResult) => void;
}

const KEY = { keyId: 'mutation-key', key: newKey(), peer: 'tap-conform.hmac' };

/** The compiled entry of conformance/mutation/broken-agent.ts (npm run mutation builds dist/ first). */
const BROKEN_AGENT = repoPath('dist/conformance/mutation/broken-agent.js');

/**
 * A target that opens in-memory connections to a fresh reference agent, each behind the mutant's
 * layer; a connection whose case asks for a shorter max_task_seconds (TAP_MAX_TASK_SECONDS, spec:
 * conformance#case-limits) reaches an agent of that limit, as a stdio agent would be started.
 */
function memoryTarget(mutant: Mutant | undefined) {
  const agents = new Map<number, Agent>();
  const agentOf = (maxTaskSeconds: number): Agent => {
    let agent = agents.get(maxTaskSeconds);
    if (agent) return agent;
    agent = createAgent({
      card: {
        agent_id: 'tap.reference-agent',
        name: 'TAP reference agent',
        description: 'The reference agent, broken on purpose by one mutation.',
        capabilities: [],
        limits: { max_concurrent_tasks: 64, max_task_seconds: maxTaskSeconds, max_message_bytes: 1048576, max_tasks_per_session: 32 },
      },
      capabilities: withConformanceCapabilities(),
      extensions: [CONFORMANCE_EXTENSION],
      keys: [{ key_id: KEY.keyId, key: b64u(KEY.key), peer: KEY.peer }],
      // As the reference agent's bin sets it (spec: limits#heartbeats: the floor of the range).
      heartbeatMs: 1_000,
      shutdownGraceMs: 10_000,
      logger: () => {},
    });
    agents.set(maxTaskSeconds, agent);
    return agent;
  };
  const open = async (o: OpenOptions): Promise<Connection> => {
    const [harness, far] = createMemoryPair({ schedule: (f) => setImmediate(f) });
    const asked = Number(o.env?.[MAX_TASK_VAR]);
    agentOf(Number.isSafeInteger(asked) && asked > 0 ? asked : 3600).attach(
      mutant ? mutateTransport(far, mutant.make(), KEY, mutant.id) : far,
    );
    return { transport: harness };
  };
  const target: TargetSpec = { kind: 'memory', display: `memory://${mutant?.id ?? 'reference'}`, open };
  return { target, stop: async () => void (await Promise.all([...agents.values()].map((a) => a.shutdown()))) };
}

/** The broken agent (the reference agent behind the mutant's layer; unbroken without one) as a process over stdio. */
function stdioTarget(mutant: Mutant | undefined) {
  const args = [BROKEN_AGENT, ...(mutant ? [mutant.id] : []), '--state-dir', STATE_PLACEHOLDER];
  const target: TargetSpec = { kind: 'stdio', command: process.execPath, args, display: `broken-agent ${mutant?.id ?? '(unbroken)'}` };
  return { target, stop: async () => {} };
}

async function suiteAgainst(
  mutant: Mutant | undefined,
  cases: readonly Case[],
  o: MutationOptions,
  binding: 'memory' | 'stdio',
): Promise<Map<string, string>> {
  const { target, stop } = binding === 'stdio' ? stdioTarget(mutant) : memoryTarget(mutant);
  const base = {
    target,
    selfId: 'tap-conform',
    key: KEY,
    stepTimeoutMs: o.stepTimeoutMs ?? 4000,
    timeScale: o.timeScale ?? 1,
    seed: 20250314,
    runs: 5,
    replay: (id: string) => `npx tsx tools/mutation.ts --only '${mutant?.id ?? ''}' # case ${id}`,
    debug: false,
    shared: new Map(),
  };
  const verdicts = new Map<string, string>();
  try {
    const found = await probe(base).catch((err: Error) => ({ problem: err.message }));
    const env: RunEnv = { ...base, probe: found, startupMs: binding === 'stdio' ? 10_000 : 3000 };
    const results = await runCases(cases, env, binding === 'stdio' ? 4 : 16, 1);
    for (const r of results) verdicts.set(r.id, r.verdict);
    if (process.env.MUTATION_DEBUG)
      for (const r of results)
        process.stderr.write(
          `${r.id} ${r.verdict} ${r.detail}\n${r.transcript
            .slice(-6)
            .map((e) => JSON.stringify(e).slice(0, 300))
            .join('\n')}\n`,
        );
  } finally {
    await stop().catch(() => {});
  }
  return verdicts;
}

/** The cases run against a mutant: those citing its requirement, and (scope profile) the rest of their profiles. */
export function casesFor(m: Mutant, scope: 'citing' | 'profile'): Case[] {
  const citing = ALL_CASES.filter((c) => c.requirements.includes(m.requirement));
  const extra = new Set(m.cases ?? []);
  if (scope === 'citing') return ALL_CASES.filter((c) => citing.includes(c) || extra.has(c.id));
  const profiles = new Set(citing.map((c) => c.profile));
  return ALL_CASES.filter((c) => profiles.has(c.profile) || extra.has(c.id));
}

/** Runs every selected mutant and scores the suite. */
export async function runMutation(o: MutationOptions = {}): Promise<MutationReport> {
  const only = o.only ?? [];
  const mutants = MUTANTS.filter((m) => only.length === 0 || only.some((g) => globMatch(g, m.id)));
  const scope = o.scope ?? 'profile';
  const plan = mutants.map((m) => ({ m, cases: casesFor(m, scope) }));
  const bindingOf = (m: Mutant) => (m.binding === 'stdio' ? 'stdio' : 'memory');
  const baseline = new Map<string, Map<string, string>>();
  for (const b of ['memory', 'stdio'] as const) {
    const union = ALL_CASES.filter((c) => plan.some((p) => bindingOf(p.m) === b && p.cases.includes(c)));
    if (union.length) baseline.set(b, await suiteAgainst(undefined, union, o, b));
  }
  const stableIn = (b: string) => new Set([...(baseline.get(b) ?? [])].filter(([, v]) => v === 'PASS').map(([id]) => id));
  const stable = { memory: stableIn('memory'), stdio: stableIn('stdio') };
  const results: MutantResult[] = new Array(plan.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < plan.length; i = next++) {
      const { m, cases } = plan[i]!;
      const started = Date.now();
      const runnable = cases.filter((c) => stable[bindingOf(m)].has(c.id));
      const verdicts = await suiteAgainst(m, runnable, o, bindingOf(m));
      const failed = [...verdicts].filter(([, v]) => v === 'FAIL' || v === 'NON-STRICT').map(([id]) => id);
      const cites = (id: string) => ALL_CASES.find((c) => c.id === id)?.requirements.includes(m.requirement) ?? false;
      const citing = failed.filter(cites);
      const r: MutantResult = {
        id: m.id,
        requirement: m.requirement,
        breaks: m.breaks,
        failed,
        citing,
        ran_citing: runnable.filter((c) => c.requirements.includes(m.requirement)).map((c) => c.id),
        caught: failed.length > 0,
        caught_by_citing: citing.length > 0,
        fired: bindingOf(m) === 'stdio' ? null : (FIRED.get(m.id) ?? 0),
        ms: Date.now() - started,
      };
      results[i] = r;
      o.onResult?.(r);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(o.jobs ?? 2, plan.length)) }, worker));
  const reasons = survivorReasons();
  const survivors = results.filter((r) => !r.caught_by_citing).map((r) => r.id);
  return scored(results, {
    survivors,
    explained: survivors.filter((id) => reasons.has(id)).map((id) => ({ mutant: id, reason: reasons.get(id)! })),
    unexplained: survivors.filter((id) => !reasons.has(id)),
    unstable: [...baseline].flatMap(([b, verdicts]) =>
      [...verdicts].filter(([, v]) => v !== 'PASS').map(([id, v]) => `${id} (${b}: ${v})`),
    ),
  });
}

/** The report of `results`: their counts and scores beside the survivors' lists. */
function scored(
  results: MutantResult[],
  lists: Pick<MutationReport, 'survivors' | 'explained' | 'unexplained' | 'unstable'>,
): MutationReport {
  const caught = results.filter((r) => r.caught).length;
  const byCiting = results.filter((r) => r.caught_by_citing).length;
  return {
    mutants: results.length,
    caught,
    caught_by_citing: byCiting,
    score: results.length ? caught / results.length : 0,
    citing_score: results.length ? byCiting / results.length : 0,
    ...lists,
    results,
  };
}

/** The written reasons for survivors: entries of conformance/untestable.json that name a mutant. */
function survivorReasons(): Map<string, string> {
  const entries = JSON.parse(readFileSync(repoPath('conformance/untestable.json'), 'utf8')) as { mutant?: string; reason: string }[];
  return new Map(entries.filter((e) => typeof e.mutant === 'string').map((e) => [e.mutant!, e.reason]));
}

/** One row of the table. */
const row = (r: MutantResult) =>
  `${r.caught_by_citing ? 'caught  ' : r.caught ? 'other   ' : 'SURVIVED'} ${r.id.padEnd(44)} ${(r.citing[0] ?? r.failed[0] ?? '-').padEnd(48)} ${String(r.fired ?? '-').padStart(5)} ${Math.round(r.ms / 1000)} s`;

/**
 * Mutants one process runs. The agents, sessions and timers of a mutant's run do not all leave
 * the heap when it ends, and a whole run in one process ran out of its 4 GB heap after 85 mutants:
 * a larger selection runs in child processes of CHUNK mutants each, one after another.
 */
const CHUNK = 40;

/** Runs `selected` in child processes of CHUNK mutants each, printing their rows, and merges their reports. */
async function runInChunks(
  selected: Mutant[],
  o: { scope: 'citing' | 'profile'; jobs: number; timeScale: number },
): Promise<MutationReport> {
  const scratch = mkdtempSync(join(tmpdir(), 'tap-mutation-'));
  const reports: MutationReport[] = [];
  try {
    for (let at = 0; at < selected.length; at += CHUNK) {
      const chunk = selected.slice(at, at + CHUNK);
      const json = join(scratch, `chunk-${at}.json`);
      process.stdout.write(`mutants ${at + 1}–${at + chunk.length} of ${selected.length} (a process of their own)\n`);
      const args = [...chunk.flatMap((m) => ['--only', m.id]), '--scope', o.scope, '--jobs', String(o.jobs)];
      args.push('--time-scale', String(o.timeScale), '--json', json);
      const child = spawnSync(process.execPath, [...process.execArgv, process.argv[1]!, ...args], {
        stdio: ['ignore', 'pipe', 'inherit'],
        encoding: 'utf8',
      });
      // A chunk's own summary is not the run's: print its rows only.
      process.stdout.write(child.stdout.split('\n\n')[0]!.trimEnd().concat('\n'));
      if (!existsSync(json))
        throw new Error(
          `the child process of mutants ${at + 1}–${at + chunk.length} wrote no report (exit ${child.status ?? child.signal})`,
        );
      reports.push(JSON.parse(readFileSync(json, 'utf8')) as MutationReport);
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return mergeReports(reports);
}

/** One report of the mutants of several reports, each mutant judged as its own run judged it. */
export function mergeReports(reports: MutationReport[]): MutationReport {
  return scored(
    reports.flatMap((r) => r.results),
    {
      survivors: reports.flatMap((r) => r.survivors),
      explained: reports.flatMap((r) => r.explained),
      unexplained: reports.flatMap((r) => r.unexplained),
      unstable: [...new Set(reports.flatMap((r) => r.unstable))],
    },
  );
}

async function main(): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        only: { type: 'string', multiple: true },
        scope: { type: 'string' },
        jobs: { type: 'string' },
        json: { type: 'string' },
        'time-scale': { type: 'string' },
        list: { type: 'boolean' },
      },
    }));
  } catch (err) {
    process.stderr.write(`mutation: ${(err as Error).message}\n`);
    return 2;
  }
  if (values.list) {
    for (const m of MUTANTS) process.stdout.write(`${m.id.padEnd(44)} ${m.breaks}\n`);
    return 0;
  }
  const scope = values.scope ?? 'profile';
  if (scope !== 'citing' && scope !== 'profile') {
    process.stderr.write(`mutation: --scope ${scope} is not one of citing, profile\n`);
    return 2;
  }
  const jobs = Number(values.jobs ?? 2);
  const selected = MUTANTS.filter((m) => !values.only?.length || values.only.some((g) => globMatch(g, m.id)));
  const options = { scope: scope as 'citing' | 'profile', jobs, timeScale: Number(values['time-scale'] ?? 1) };
  const report =
    selected.length > CHUNK
      ? await runInChunks(selected, options)
      : await runMutation({ only: values.only, ...options, onResult: (r) => process.stdout.write(`${row(r)}\n`) });
  const file = values.json ?? 'mutation-report.json';
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  process.stdout.write(
    `\n${report.mutants} mutants: ${report.caught} caught (${pct(report.score)}), ${report.caught_by_citing} by a case citing the broken requirement (${pct(report.citing_score)})\n`,
  );
  if (report.unstable.length) process.stdout.write(`left out (failing against the unbroken agent): ${report.unstable.join(', ')}\n`);
  for (const e of report.explained) process.stdout.write(`survivor ${e.mutant}: ${e.reason}\n`);
  if (report.unexplained.length)
    process.stdout.write(
      `survivors without a catching case or a reason: ${report.unexplained.join(', ')}\n  add a case, or a { id, mutant, reason } to conformance/untestable.json\n`,
    );
  process.stdout.write(`JSON report: ${file}\n`);
  return report.unexplained.length ? 1 : 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) process.exit(await main());
