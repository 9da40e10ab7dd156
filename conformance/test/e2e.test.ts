/**
 * The reference agent passes every case at every level, over stdio and over WebSocket, with
 * three seeds besides the default one (the default seed is the certify step of `npm test`, the
 * README's main job): no FAIL, no ERROR, no UNIMPLEMENTED; only cases of the other binding are
 * SKIPPED (spec: conformance#verdicts). Over stdio the agent keeps a state folder per case, so
 * the restart cases run; over WebSocket the sessions are signed, so the integrity cases run, and
 * the resume window is 10 s, so the orphaned-session case runs.
 * Both runs are child processes of bin/tap-conform.mjs writing a JSON report.
 * TAP_E2E_SEEDS (comma-separated) replaces the seeds; TAP_E2E_TIME_SCALE sets --time-scale
 * (default: from the load of the machine).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { b64u, newKey } from '../mac.ts';
import { DEFAULT_SEED, HARNESS_SIGNED_ID } from '../options.ts';
import { notPerfect } from '../report/model.ts';
import { startListening } from '../../tools/listening-agent.ts';
import type { Verdict } from '../verdict.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CONFORM = join(ROOT, 'bin/tap-conform.mjs');
const AGENT = join(ROOT, 'bin/tap-reference-agent.mjs');
const SCALE =
  Number(process.env.TAP_E2E_TIME_SCALE) || Math.min(4, Math.max(1, Math.ceil((loadavg()[0]! / Math.max(1, cpus().length)) * 2) / 2));
const SEEDS = (process.env.TAP_E2E_SEEDS ?? '1,4242,987654321').split(',').map((x) => x.trim());
const LIMIT_MS = 900_000 * SCALE;
const dir = mkdtempSync(join(tmpdir(), 'tap-conform-e2e-'));
const children: ChildProcess[] = [];

interface Report {
  certified: boolean;
  level: string;
  seed: number;
  summary: Record<string, number>;
  cases: { id: string; verdict: Verdict; detail: string }[];
}

function run(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CONFORM, ...args], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
    children.push(child);
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

function problems(r: Report): string[] {
  return notPerfect(r.cases).map((c) => `${c.verdict} ${c.id}: ${c.detail}`);
}

function expectCertified(report: Report, r: { code: number | null; stderr: string }, seed: string): void {
  expect(report.seed).toBe(Number(seed));
  expect(problems(report), r.stderr).toEqual([]);
  expect(report.certified).toBe(true);
  expect(r.code).toBe(0);
}

/** Starts the reference agent on WebSocket with `env` and resolves with the URL it prints. */
async function listen(env: NodeJS.ProcessEnv): Promise<{ url: string; agent: ChildProcess }> {
  // A 10 s resume window lets the case of an orphaned session's end run (the default is 5 min).
  const { url, child } = await startListening(
    [process.execPath, AGENT, '--listen', 'ws://127.0.0.1:0/tap', '--resume-window-ms', '10000'],
    { cwd: ROOT, env, stderr: 'ignore' },
  );
  children.push(child);
  return { url, agent: child };
}

afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

it('the seeds differ from the default one', () => {
  expect(SEEDS).toHaveLength(3);
  expect(new Set([...SEEDS, String(DEFAULT_SEED)]).size).toBe(4);
});

describe.each(SEEDS)('the reference agent is certified with seed %s (spec: conformance#verdicts)', (seed) => {
  it('over stdio, with a state folder', { timeout: LIMIT_MS }, async () => {
    const json = join(dir, `stdio-${seed}.json`);
    const r = await run([
      '--seed',
      seed,
      '--time-scale',
      String(SCALE),
      '--json',
      json,
      '--',
      process.execPath,
      AGENT,
      '--state-dir',
      '{state}',
    ]);
    expectCertified(JSON.parse(readFileSync(json, 'utf8')) as Report, r, seed);
  });

  it('over WebSocket, signed', { timeout: LIMIT_MS }, async () => {
    const key = { TAP_HMAC_KEY_ID: 'e2e-key', TAP_HMAC_KEY: b64u(newKey()), TAP_HMAC_PEER: HARNESS_SIGNED_ID };
    const { url, agent } = await listen({ ...process.env, ...key });
    const json = join(dir, `ws-${seed}.json`);
    const r = await run([
      url,
      '--hmac-key-id',
      key.TAP_HMAC_KEY_ID,
      '--hmac-key',
      key.TAP_HMAC_KEY,
      '--hmac-peer',
      key.TAP_HMAC_PEER,
      '--seed',
      seed,
      '--time-scale',
      String(SCALE),
      '--json',
      json,
    ]);
    agent.kill('SIGTERM');
    const report = JSON.parse(readFileSync(json, 'utf8')) as Report;
    expectCertified(report, r, seed);
    expect(report.cases.find((c) => c.id === 'resume.attachment.same-principal')?.verdict).toBe('PASS');
  });
});
