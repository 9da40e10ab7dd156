/**
 * Scenario 0, start-up: how long the shipped bins take to be useful, against `node -e 0` in the
 * same run — `tap-conform --version` to its exit, and `tap-reference-agent` from spawn to the
 * `handshake.ack` it writes for a handshake.init on stdin (what tap-conform pays per stdio case).
 * Both run the compiled dist/ exactly as an installed package does.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Budget } from '../lib/options.ts';
import { ROOT } from '../lib/paths.ts';
import { compare, notRun, type Row } from '../lib/report.ts';
import { spread } from '../lib/stats.ts';
import { oneLine } from './roundtrip.ts';

const SCENARIO = '0. Start-up';
const CONFORM = join(ROOT, 'bin', 'tap-conform.mjs');
const AGENT = join(ROOT, 'bin', 'tap-reference-agent.mjs');
const TARGET = 'within 2× of `node -e 0`';

export function startupRowIds(): string[] {
  return ['startup.conform-version', 'startup.agent-ack'];
}

/** Milliseconds from spawn to exit of `node args`. */
function timeToExit(args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve(performance.now() - t0) : reject(new Error(`node ${args.join(' ')} exited ${code}`)),
    );
  });
}

/** Milliseconds from spawning the agent to the first stdout line holding its handshake.ack. */
function timeToAck(init: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [AGENT], { cwd: ROOT, stdio: ['pipe', 'pipe', 'ignore'] });
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('no handshake.ack within 20 s'));
    }, 20_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (out.includes('"handshake.ack"')) {
        const ms = performance.now() - t0;
        clearTimeout(timer);
        child.kill('SIGKILL');
        resolve(ms);
      }
    });
    child.stdin.write(`${init}\n`);
  });
}

/** Alternates the measured command with the baseline, so that both see the same machine. */
async function paired(reps: number, measure: () => Promise<number>): Promise<{ tap: number[]; floor: number[] }> {
  const tap: number[] = [];
  const floor: number[] = [];
  await timeToExit(['-e', '0']);
  await measure();
  for (let i = 0; i < reps; i++) {
    floor.push(await timeToExit(['-e', '0']));
    tap.push(await measure());
  }
  return { tap, floor };
}

export async function startup(budget: Budget, selected: (id: string) => boolean, log: (line: string) => void): Promise<Row[]> {
  const reps = budget.mode === 'full' ? 20 : budget.mode === 'quick' ? 8 : 3;
  const init = JSON.stringify(JSON.parse(readFileSync(join(ROOT, 'fixtures/messages/handshake.init/target-wildcard.json'), 'utf8')));
  const rows: Row[] = [];
  const kinds: [string, string, string, () => Promise<number>][] = [
    ['startup.conform-version', '`tap-conform --version`, spawn to exit', 'spawn to exit', () => timeToExit([CONFORM, '--version'])],
    [
      'startup.agent-ack',
      '`tap-reference-agent`, spawn to its handshake.ack',
      'spawn to the handshake.ack line on stdout',
      () => timeToAck(init),
    ],
  ];
  for (const [id, title, what, measure] of kinds) {
    if (!selected(id)) continue;
    const base = {
      id,
      scenario: SCENARIO,
      title,
      unit: 'ms',
      better: 'lower' as const,
      method: `${what}, ${reps} repetitions alternating with \`node -e 0\` (spawn to exit) on the same machine; the first of each is a discarded warm-up`,
    };
    try {
      const { tap, floor } = await paired(reps, measure);
      const figure = { name: title.split(',')[0]!.replaceAll('`', ''), value: spread(tap) };
      const baseline = compare(figure, 'node', { name: 'node -e 0', value: spread(floor) });
      const ratio = baseline.ratio ?? NaN;
      log(
        `  ${id}: median ${figure.value.median.toFixed(0)} ms against node -e 0 ${baseline.value.median.toFixed(0)} ms (${ratio.toFixed(2)}×)`,
      );
      rows.push({
        ...base,
        tap: figure,
        baselines: [baseline],
        targets: [{ text: TARGET, measured: `${ratio.toFixed(2)}× node -e 0`, met: ratio <= 2 }],
      });
    } catch (err) {
      rows.push(notRun(base, oneLine(err), [TARGET]));
    }
  }
  return rows;
}
