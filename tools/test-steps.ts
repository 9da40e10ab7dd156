/**
 * The steps `npm test` is made of (tools/test-all.ts): commands run side by side, vitest with its
 * JSON report counted test by test, and the CPU the run spent.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { getPriority, setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { lacks, missingReason, NEEDS, type SystemTool } from '../test/system-tools.testkit.ts';

export interface StepResult {
  passed: number;
  failed: number;
  /** Tests skipped, by reason ("nats-server missing: apt-get install nats-server"). */
  skipped?: Record<string, number>;
  note?: string;
}

export interface Step {
  name: string;
  run: () => Promise<StepResult>;
}

const root = new URL('..', import.meta.url).pathname;

/**
 * Runs a command; resolves with its exit code. Its output is passed through, or with `capture`
 * kept and printed in one piece when it ends (for commands that run beside another step).
 * `niceness` lowers the priority of the command and of the processes it starts.
 */
export function sh(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}, capture = false, niceness = 0): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, stdio: capture ? ['ignore', 'pipe', 'pipe'] : 'inherit', env: { ...process.env, ...env } });
    if (niceness > 0 && child.pid !== undefined) {
      try {
        setPriority(child.pid, Math.min(19, getPriority(child.pid) + niceness));
      } catch {
        // Not allowed here: it runs at the run's priority.
      }
    }
    let output = '';
    child.stdout?.on('data', (d: Buffer) => (output += d));
    child.stderr?.on('data', (d: Buffer) => (output += d));
    const done = (code: number) => {
      if (capture) {
        const label = [cmd === process.execPath ? 'node' : cmd, ...args.filter((a) => a !== '--import' && a !== 'tsx')].join(' ');
        process.stdout.write(
          `\n── ${label}: ${code === 0 ? 'ok' : `FAIL (exit ${code})`}\n${output.trim() ? `${output.trimEnd()}\n` : ''}`,
        );
      }
      resolve(code);
    };
    child.on('error', () => done(127));
    child.on('close', (code, signal) => done(code ?? (signal ? 128 : 1)));
  });
}

/** Commands run side by side; each counts one check, passed when it exits 0. */
export const together = (name: string, commands: [string, string[]][], capture = false, niceness = 0): Step => ({
  name,
  run: async () => {
    const codes = await Promise.all(commands.map(([cmd, args]) => sh(cmd, args, {}, capture, niceness)));
    const failed = codes.filter((c) => c !== 0).length;
    return { passed: codes.length - failed, failed };
  },
});

export const tsx = (script: string, ...args: string[]): [string, string[]] => [process.execPath, ['--import', 'tsx', script, ...args]];

/** Runs vitest with a JSON report and counts its tests; `env` adds to its environment (TAP_TEST_TIER=fast: the fast tier only). */
export const vitest = (name: string, args: string[] = [], env: NodeJS.ProcessEnv = {}): Step => ({
  name,
  run: async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-vitest-'));
    const out = join(dir, 'report.json');
    const code = await sh('npx', ['vitest', 'run', ...args, '--reporter=dot', '--reporter=json', `--outputFile.json=${out}`], env);
    try {
      const report = JSON.parse(readFileSync(out, 'utf8')) as {
        numPassedTests: number;
        numFailedTests: number;
        numTotalTests: number;
        testResults: {
          name: string;
          status: string;
          message?: string;
          startTime: number;
          endTime: number;
          assertionResults: { fullName: string; status: string }[];
        }[];
      };
      for (const file of report.testResults) {
        for (const t of file.assertionResults)
          if (t.status === 'failed') console.error(`  FAIL ${file.name.replace(root, '')}: ${t.fullName}`);
        if (file.status === 'failed' && file.assertionResults.length === 0)
          console.error(`  FAIL ${file.name.replace(root, '')}: ${file.message ?? ''}`);
      }
      // The slowest files, for keeping the run within its budget.
      const took = (f: { startTime: number; endTime: number }): number => f.endTime - f.startTime;
      const slowest = [...report.testResults].sort((x, y) => took(y) - took(x)).slice(0, 8);
      console.log(`  slowest files: ${slowest.map((f) => `${f.name.replace(root, '')} ${(took(f) / 1000).toFixed(1)} s`).join(', ')}`);
      // And the long files that ended last, with when each started and ended (s from the first
      // start): the tail of the run, where the cores wait on the few files still running.
      const first = Math.min(...report.testResults.map((f) => f.startTime));
      const last = report.testResults
        .filter((f) => took(f) >= 10_000)
        .sort((x, y) => y.endTime - x.endTime)
        .slice(0, 6);
      const at = (t: number): string => ((t - first) / 1000).toFixed(0);
      console.log(
        `  long files that ended last: ${last.map((f) => `${f.name.replace(root, '')} ${at(f.startTime)}–${at(f.endTime)} s`).join(', ')}`,
      );
      const failed = report.numFailedTests + (code !== 0 && report.numFailedTests === 0 ? 1 : 0);
      // A skip is never silent: each is counted under the tool its title names, or as the test's own.
      const skipped: Record<string, number> = {};
      for (const file of report.testResults)
        for (const t of file.assertionResults) {
          if (!['skipped', 'pending', 'todo'].includes(t.status)) continue;
          const tool = NEEDS.exec(t.fullName)?.[1];
          const reason = tool && lacks(tool as SystemTool) ? missingReason(tool) : 'skipped by the test itself; see the vitest output';
          skipped[reason] = (skipped[reason] ?? 0) + 1;
        }
      return { passed: report.numPassedTests, failed, skipped, note: `${report.numTotalTests} tests` };
    } catch {
      return { passed: 0, failed: 1, note: 'vitest wrote no report' };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
});

/**
 * The CPU seconds spent so far by this process and by the processes it has waited for (all of the
 * run's steps, which reap their own), from /proc/self/stat; undefined where there is no /proc.
 * Two cores give 720 of them in the 6 minutes `npm test` may take (ARCHITECTURE.md, "Test tiers").
 */
export function cpuSeconds(): number | undefined {
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
    // utime, stime, cutime, cstime are fields 14 to 17 of stat(5), in clock ticks of 1/100 s.
    return fields.slice(11, 15).reduce((sum, f) => sum + Number(f), 0) / 100;
  } catch {
    return undefined;
  }
}
