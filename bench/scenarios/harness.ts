/**
 * Scenario 4, harness: the wall time of the full tap-conform suite against tap-reference-agent
 * (the bins exactly as shipped), per transport, and the time per case from the JSON report;
 * against the same command running a single case (the fixed cost: loading, spawning, one handshake).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnScript, within } from '../lib/children.ts';
import type { Budget } from '../lib/options.ts';
import { ROOT } from '../lib/paths.ts';
import { compare, missingBaseline, notRun, type Row } from '../lib/report.ts';
import { quantile, spread } from '../lib/stats.ts';
import { oneLine } from './roundtrip.ts';

const SCENARIO = '4. Conformance harness (tap-conform)';
const CONFORM = join(ROOT, 'bin', 'tap-conform.mjs');
const AGENT = join(ROOT, 'bin', 'tap-reference-agent.mjs');
const ONE_CASE = 'core.handshake.complete';

type Kind = 'stdio' | 'websocket';

interface ConformReport {
  duration_ms: number;
  summary: Record<string, number>;
  cases: Array<{ id: string; verdict: string; duration_ms: number }>;
}

interface Run {
  wallS: number;
  exitCode: number;
  report: ConformReport;
}

export function harnessRowIds(): string[] {
  return ['harness.stdio', 'harness.websocket'];
}

/** Runs tap-conform once; `only` selects cases (none: the full suite). */
async function conform(kind: Kind, only: string[] | undefined, timeoutMs: number): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), 'tap-bench-conform-'));
  const json = join(dir, 'report.json');
  const selection = (only ?? []).flatMap((o) => ['--only', o]);
  let agent: ReturnType<typeof spawnScript> | undefined;
  try {
    let args: string[];
    let env: NodeJS.ProcessEnv = {};
    if (kind === 'stdio') {
      args = [CONFORM, '--no-color', '--json', json, ...selection, '--', process.execPath, AGENT];
    } else {
      // A pre-shared key, so that the integrity cases run over WebSocket too.
      const key = randomBytes(32).toString('base64url');
      env = { TAP_HMAC_KEY_ID: 'bench-key', TAP_HMAC_KEY: key, TAP_HMAC_PEER: 'tap-conform.hmac' };
      agent = spawnScript(AGENT, ['--listen', 'ws://127.0.0.1:0'], env);
      const url = (await agent.line((l) => l.startsWith('ws://'), 60_000, 'tap-reference-agent listening')).trim();
      // The key may begin with '-', so it is passed as --hmac-key=<key>.
      args = [CONFORM, '--no-color', '--json', json, '--hmac-key-id', 'bench-key', `--hmac-key=${key}`, ...selection, url];
    }
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr = (stderr + c).slice(-2000)));
    const exitCode = await within(
      new Promise<number>((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)))),
      timeoutMs,
      `tap-conform over ${kind}`,
    ).catch((err: Error) => {
      child.kill('SIGKILL');
      throw err;
    });
    const wallS = (performance.now() - t0) / 1000;
    let report: ConformReport;
    try {
      report = JSON.parse(readFileSync(json, 'utf8')) as ConformReport;
    } catch {
      throw new Error(`tap-conform exited ${exitCode} without a JSON report${stderr ? `: ${stderr.trim().split('\n').at(-1)}` : ''}`);
    }
    return { wallS, exitCode, report };
  } finally {
    await agent?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function harness(budget: Budget, selected: (id: string) => boolean, log: (line: string) => void): Promise<Row[]> {
  const rows: Row[] = [];
  for (const kind of ['stdio', 'websocket'] as const) {
    const id = `harness.${kind}`;
    if (!selected(id)) continue;
    const suite = budget.harnessOnly ? `cases ${budget.harnessOnly.join(', ')}` : 'the full suite';
    log(`harness over ${kind}: ${suite}`);
    const target = 'The full conformance suite under 30 s per transport';
    const base = {
      id,
      scenario: SCENARIO,
      title: `${kind}, ${budget.harnessOnly ? 'selected cases' : 'full suite'}`,
      unit: 's',
      better: 'lower' as const,
      method:
        `wall time of \`tap-conform --json\` against tap-reference-agent (${kind === 'stdio' ? 'spawned by the harness' : 'listening on 127.0.0.1, started beforehand, with a pre-shared key'}), ` +
        `${suite}, default jobs; the baseline runs only ${ONE_CASE}; up to ${budget.harnessReps} repetitions of each (no new one after ${budget.harnessBudgetMs / 1000} s)`,
    };
    const full: Run[] = [];
    const single: number[] = [];
    let singleError: string | undefined;
    const started = performance.now();
    try {
      for (let rep = 0; rep < budget.harnessReps; rep++) {
        if (rep > 0 && performance.now() - started > budget.harnessBudgetMs) {
          log(`  no further repetition: the runs took ${((performance.now() - started) / 1000).toFixed(0)} s already`);
          break;
        }
        full.push(await conform(kind, budget.harnessOnly, budget.harnessTimeoutMs));
        if (!budget.harnessBaseline) singleError = `a ${budget.mode} run skips the one-case baseline`;
        else {
          try {
            single.push((await conform(kind, [ONE_CASE], budget.harnessTimeoutMs)).wallS);
          } catch (err) {
            singleError = oneLine(err);
          }
        }
        const last = full.at(-1)!;
        log(
          `  repetition ${rep + 1}/${budget.harnessReps}: ${last.wallS.toFixed(1)} s (exit ${last.exitCode}, ${last.report.cases.length} cases), one case ${single.at(-1)?.toFixed(1) ?? '–'} s`,
        );
      }
    } catch (err) {
      rows.push(notRun(base, oneLine(err), budget.harnessOnly ? [] : [target]));
      continue;
    }
    const caseMs = full.flatMap((r) => r.report.cases.map((c) => c.duration_ms)).sort((a, b) => a - b);
    const last = full.at(-1)!.report;
    const slowest = [...last.cases]
      .sort((a, b) => b.duration_ms - a.duration_ms)
      .slice(0, 5)
      .map((c) => `${c.id} ${c.duration_ms} ms`);
    const tap = {
      name: `tap-conform, ${last.cases.length} cases`,
      value: spread(full.map((r) => r.wallS)),
      extra: {
        case_median_ms: spread(
          full.map((r) =>
            quantile(
              r.report.cases.map((c) => c.duration_ms).sort((a, b) => a - b),
              0.5,
            ),
          ),
        ),
        case_max_ms: spread(full.map((r) => Math.max(...r.report.cases.map((c) => c.duration_ms)))),
      },
    };
    const oneName = `tap-conform running ${ONE_CASE} only`;
    const baseline =
      single.length === 0
        ? missingBaseline('one-case', oneName, singleError ?? 'no figure')
        : compare(tap, 'one-case', { name: oneName, value: spread(single) });
    const targets = budget.harnessOnly
      ? [{ text: target, measured: 'only selected cases in this mode', met: null }]
      : [{ text: target, measured: `${tap.value.median.toFixed(1)} s`, met: tap.value.median < 30 }];
    rows.push({
      ...base,
      method: `${base.method}; ${full.length} done`,
      tap,
      baselines: [baseline],
      targets,
      details: {
        verdicts: last.summary,
        exit_codes: full.map((r) => r.exitCode),
        case_ms: { median: quantile(caseMs, 0.5), p90: quantile(caseMs, 0.9), max: caseMs.at(-1) },
        case_ms_sum: last.cases.reduce((s, c) => s + c.duration_ms, 0),
        slowest_cases: slowest,
      },
    });
  }
  return rows;
}
