/**
 * The benchmarks still run: `bench/run.ts --tiny` writes latest.json with every row, each holding
 * numbers or an explicit "not run: <reason>". No timing is asserted; figures of a tiny run mean nothing.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from './lib/paths.ts';
import type { BenchResult } from './lib/report.ts';
import { ALL_ROWS, SCENARIOS } from './scenarios/index.ts';

const out = mkdtempSync(join(tmpdir(), 'tap-bench-test-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

function bench(args: string[], timeoutMs: number) {
  return spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'run.ts'), ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: timeoutMs,
  });
}

describe('npm run bench', () => {
  it('refuses an unknown row with a one-line usage error (exit 2)', () => {
    const run = bench(['--only', 'no-such-row', '--out', out], 60_000);
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/no row starts with no-such-row/);
  }, 90_000);

  it('writes every row with figures or "not run: <reason>" in a tiny run', () => {
    const run = bench(['--tiny', '--out', out], 420_000);
    expect(run.status, run.stderr).toBe(0);
    const result = JSON.parse(readFileSync(join(out, 'latest.json'), 'utf8')) as BenchResult;
    expect(result.machine.node).toBe(process.versions.node);
    expect(result.rows.map((r) => r.id)).toEqual([...ALL_ROWS]);
    // A row's heading is its scenario's, numbered as the list of scenarios numbers it.
    for (const row of result.rows) {
      const scenario = SCENARIOS.find((s) => s.rows.includes(row.id))!;
      expect(row.scenario.startsWith(scenario.name), `${row.id} under "${row.scenario}"`).toBe(true);
    }
    for (const row of result.rows) {
      if (row.not_run !== undefined) {
        expect(row.not_run, row.id).toMatch(/^not run: \S/);
        continue;
      }
      expect(Number.isFinite(row.tap?.value.median), `${row.id} has a TAP figure`).toBe(true);
      expect(row.baselines.length, `${row.id} has a baseline`).toBeGreaterThan(0);
      for (const b of row.baselines) {
        if (b.not_run !== undefined) expect(b.not_run, `${row.id} / ${b.id}`).toMatch(/^not run: \S/);
        else expect(Number.isFinite(b.value.median) && Number.isFinite(b.ratio), `${row.id} / ${b.id} has a figure and a ratio`).toBe(true);
      }
    }
    // The NATS rows with 64 in flight carry their flow's ceiling, and their target says where TAP and the ceiling stand.
    for (const [id, ceiling] of [
      ['nats.roundtrip.inflight64', 'bare4'],
      ['nats.roundtrip.quiet.inflight64', 'bare2'],
    ] as const) {
      const row = result.rows.find((r) => r.id === id)!;
      if (row.not_run !== undefined) continue;
      const b = row.baselines.find((x) => x.id === ceiling);
      expect(b?.not_run, `${id} / ${ceiling}`).toBeUndefined();
      expect(Number.isFinite(b?.value.median), `${id} has its ceiling's figure`).toBe(true);
      expect(row.targets[0]?.measured).toMatch(
        /; TAP \d+\.\d+× its ceiling, which is \d+\.\d+× the floor(, under the target.s [\d.]+×: out of reach in this run .*)?$/,
      );
    }
    // The mesh and durable rows carry what a task cost each side in CPU, for TAP and the floor; the mesh compares their sums.
    for (const [id, floorId] of [
      ['mesh.throughput', 'bare-nats'],
      ['mesh.throughput.quiet', 'bare-nats'],
      ['mesh.throughput.hosted', 'bare-nats'],
      ['nats.durable.four-agents', 'bare'],
    ] as const) {
      const row = result.rows.find((r) => r.id === id)!;
      if (row.not_run !== undefined) continue;
      for (const figure of [row.tap!, row.baselines.find((b) => b.id === floorId)!]) {
        for (const side of ['cpu_requester_us', 'cpu_agents_us', 'cpu_server_us']) {
          expect(Number.isFinite(figure.extra?.[side]?.median), `${id} / ${figure.name}: ${side}`).toBe(true);
        }
      }
    }
    const hosted = result.rows.find((r) => r.id === 'mesh.throughput.hosted')!;
    if (hosted.not_run === undefined) {
      expect(String(hosted.details?.of_floor)).toMatch(/CPU a task, every process together: \d+ µs, the floor's \d+ µs$/);
    }
    const markdown = readFileSync(join(out, 'latest.md'), 'utf8');
    for (const id of ALL_ROWS) expect(markdown).toContain(`\`${id}\``);
  }, 480_000);
});
