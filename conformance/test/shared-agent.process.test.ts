/**
 * tap-conform against one agent process that serves every case over WebSocket, whose card allows
 * 8 tasks at once, the value of the README's example: the suite keeps its own load within that
 * limit, so the agent, which answers BUSY beyond it as it must, certifies (spec: limits#concurrency,
 * conformance#verdicts TAP-CONF-002). The run is the bin, with the reference agent's bin behind it.
 * Over NATS the same run is the durable agent's certification in nats-durable.server.test.ts (one
 * whole run over NATS with durable queues holds both); shared-agent.testkit.ts has what both check.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { b64u, newKey } from '../mac.ts';
import { busyAnswers, expectWithinLimits, SHARED_LIMIT } from './shared-agent.testkit.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CONFORM = join(ROOT, 'bin/tap-conform.mjs');
const AGENT = join(ROOT, 'bin/tap-reference-agent.mjs');
const KEY = { TAP_HMAC_KEY_ID: 'shared-key', TAP_HMAC_KEY: b64u(newKey()), TAP_HMAC_PEER: 'tap-conform.hmac' };
const work = mkdtempSync(join(tmpdir(), 'tap-shared-agent-'));
const started = new Set<ChildProcess>();

afterAll(async () => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

/** Starts the reference agent with `args` and resolves with the URL it prints once ready. */
async function agent(args: string[]): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [AGENT, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...KEY },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  started.add(child);
  const [url] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
  return { url, child };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
  started.delete(child);
}

interface Run {
  code: number | null;
  stderr: string;
  // biome-ignore lint/suspicious/noExplicitAny: the JSON report, read by field
  report: any;
  /** Per case id: how many times the agent answered BUSY. */
  busy: Map<string, number>;
}

/** Runs the whole suite against `url` with the run's key, a JSON report and every transcript. */
function conform(name: string, url: string): Promise<Run> {
  const json = join(work, `${name}.json`);
  const transcripts = join(work, `${name}-transcripts`);
  const args = [CONFORM, url, '--no-color', '--json', json, '--transcripts', transcripts];
  args.push('--hmac-key-id', KEY.TAP_HMAC_KEY_ID, `--hmac-key=${KEY.TAP_HMAC_KEY}`, '--hmac-peer', KEY.TAP_HMAC_PEER);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    started.add(child);
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => {
      started.delete(child);
      resolve({
        code,
        stderr,
        report: existsSync(json) ? JSON.parse(readFileSync(json, 'utf8')) : { cases: [], level: stderr.slice(-2000) },
        busy: busyAnswers(transcripts),
      });
    });
  });
}

describe('an agent whose card allows 8 tasks at once, serving every case from one process', () => {
  it('over WebSocket, certifies', { timeout: 600_000 }, async () => {
    const { url, child } = await agent(['--listen', 'ws://127.0.0.1:0', '--max-concurrent-tasks', String(SHARED_LIMIT)]);
    try {
      const run = await conform('websocket', url);
      expectWithinLimits(run);
      expect(run.report.certified, run.report.level).toBe(true);
      expect(run.code, run.stderr.slice(-2000)).toBe(0);
    } finally {
      await stop(child);
    }
  });
});
