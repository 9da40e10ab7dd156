/**
 * `npm test`: every check the project has, in order, each reported as it finishes, ending with
 * one plain line "N passed, N failed" (N counts unit tests and conformance cases as well as the
 * whole-step checks). Exits non-zero on any failure. `--skip <step>` leaves a step out.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { notPerfect, type Report } from '../conformance/report/model.ts';

interface StepResult {
  passed: number;
  failed: number;
  note?: string;
}

interface Step {
  name: string;
  run: () => Promise<StepResult>;
}

const root = new URL('..', import.meta.url).pathname;

/** Runs a command with inherited output; resolves with its exit code. */
function sh(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
    child.on('error', () => resolve(127));
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

/** A step that passes when the command exits 0. */
const command = (name: string, cmd: string, args: string[]): Step => ({
  name,
  run: async () => ((await sh(cmd, args)) === 0 ? { passed: 1, failed: 0 } : { passed: 0, failed: 1 }),
});

/** Runs vitest with a JSON report and counts its tests. */
const vitest = (name: string, args: string[]): Step => ({
  name,
  run: async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-vitest-'));
    const out = join(dir, 'report.json');
    const code = await sh('npx', ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${out}`, ...args]);
    try {
      const report = JSON.parse(readFileSync(out, 'utf8')) as { numPassedTests: number; numFailedTests: number; numTotalTests: number };
      const failed = report.numFailedTests + (code !== 0 && report.numFailedTests === 0 ? 1 : 0);
      return { passed: report.numPassedTests, failed, note: `${report.numTotalTests} tests` };
    } catch {
      return { passed: 0, failed: 1, note: 'vitest wrote no report' };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
});

/** Certifies the reference agent and counts the cases of the JSON reports. */
const certify: Step = {
  name: 'conformance run of the reference agent (stdio and WebSocket)',
  run: async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-certify-'));
    // --time-scale 2 stretches only the harness's waits, for a CI machine that runs other jobs.
    const code = await sh('npx', ['tsx', 'tools/certify-reference.ts', '--json-dir', dir, '--', '--time-scale', '2']);
    let passed = 0;
    let failed = 0;
    for (const transport of ['stdio', 'websocket']) {
      try {
        const report = JSON.parse(readFileSync(join(dir, `${transport}.json`), 'utf8')) as Pick<Report, 'certified' | 'cases'>;
        // The reference is held to every case, not just to certification (conformance/report/model.ts).
        const bad = new Set(notPerfect(report.cases));
        for (const c of report.cases) {
          if (!bad.has(c)) passed++;
          else {
            failed++;
            console.error(`  ${transport}: ${c.verdict} ${c.id}: ${c.detail}`);
          }
        }
        if (!report.certified) failed++;
      } catch {
        failed++;
      }
    }
    rmSync(dir, { recursive: true, force: true });
    if (code !== 0 && failed === 0) failed = 1;
    return { passed, failed };
  },
};

export const STEPS: Step[] = [
  command('type-check', 'npx', ['tsc', '--noEmit', '-p', 'tsconfig.json']),
  command('schema drift', 'npx', ['tsx', 'tools/emit-schemas.ts', '--check']),
  command('schema bundle drift', 'npx', ['tsx', 'tools/emit-schema-bundle.ts', '--check']),
  command('requirement index drift', 'npx', ['tsx', 'tools/requirements.ts', '--check']),
  command('requirement coverage', 'npx', ['tsx', 'tools/check-coverage.ts']),
  vitest('unit tests, fixtures, transcripts, AsyncAPI and the harness self-test', []),
  certify,
];

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { skip: { type: 'string', multiple: true, default: [] } } });
  const skip = new Set(values.skip);
  let passed = 0;
  let failed = 0;
  const lines: string[] = [];
  for (const step of STEPS) {
    if (skip.has(step.name)) continue;
    console.log(`\n── ${step.name}`);
    const started = Date.now();
    const r = await step.run();
    passed += r.passed;
    failed += r.failed;
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    lines.push(
      `${r.failed === 0 ? 'ok  ' : 'FAIL'} ${step.name}: ${r.passed} passed, ${r.failed} failed${r.note ? ` (${r.note})` : ''} in ${secs} s`,
    );
  }
  console.log('\n' + lines.join('\n'));
  console.log(`${passed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}

process.exit(await main());
