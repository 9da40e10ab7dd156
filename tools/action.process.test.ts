/**
 * The GitHub Action (action.yml) as a workflow runs it: its steps' scripts, from the file itself,
 * with the environment GitHub gives them, against the reference agent. `npm ci` is left out of the
 * install step (the checkout is installed); the build and the site are run as the step says.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const ROOT = new URL('..', import.meta.url).pathname;
const action = parse(readFileSync(join(ROOT, 'action.yml'), 'utf8')) as {
  runs: { steps: { id?: string; name: string; run: string; env?: Record<string, string> }[] };
};
const dir = mkdtempSync(join(tmpdir(), 'tap-action-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function step(name: string, env: Record<string, string>): { status: number | null; output: string } {
  const s = action.runs.steps.find((x) => x.name === name)!;
  const script = s.run
    .split('\n')
    .filter((line) => !line.trim().startsWith('npm ci '))
    .join('\n');
  const r = spawnSync('bash', ['-c', script], { cwd: dir, env: { ...process.env, GITHUB_ACTION_PATH: ROOT, ...env }, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

describe('the GitHub Action', () => {
  it('builds, runs tap-conform on the agent, writes every report with the spec site beside them, and sets its outputs', () => {
    const install = step('Install tap-conform', {});
    expect(install.status, install.output).toBe(0);
    const outputs = join(dir, 'outputs');
    const summary = join(dir, 'summary.md');
    const conform = action.runs.steps.find((x) => x.id === 'conform')!;
    const inputs: Record<string, string> = {
      AGENT: `node ${join(ROOT, 'bin/tap-reference-agent.mjs')}`,
      LEVEL: 'may',
      PROFILES: '',
      EXPECTED: '',
      // A glob (the step must not expand it) that picks two quick cases: the run is the action's, not the suite's.
      ARGS: '--only core.handshake.identity-*',
      DIR: 'tap-conform-report',
      SPEC_BASE_URL: '',
    };
    expect(Object.keys(conform.env ?? {}).sort()).toEqual(Object.keys(inputs).sort());
    const run = step(conform.name, { ...inputs, GITHUB_OUTPUT: outputs, GITHUB_STEP_SUMMARY: summary });
    expect(run.status, run.output).toBe(0);
    const out = readFileSync(outputs, 'utf8');
    expect(out).toMatch(/^level=Focused run: \d+ of \d+ cases — a certification needs the whole suite$/m);
    expect(out).toContain('certified=false');
    const report = join(dir, 'tap-conform-report');
    for (const f of ['report.json', 'report.html', 'report.md', 'report.xml', 'badge.svg', 'spec/index.html'])
      expect(existsSync(join(report, f)), f).toBe(true);
    // The uploaded report's spec links lead into the copy beside it.
    const html = readFileSync(join(report, 'report.html'), 'utf8');
    const links = [...html.matchAll(/href="(spec\/[^"#]+)/g)].map((m) => m[1]!);
    expect(links.length).toBeGreaterThan(0);
    for (const link of new Set(links)) expect(existsSync(join(report, link)), link).toBe(true);
    expect(readFileSync(summary, 'utf8')).toContain('Focused run');
  }, 120_000);
});
