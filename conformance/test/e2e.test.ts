/**
 * The reference agent is certified by the full suite, over stdio and over WebSocket (spec:
 * conformance#verdicts): zero FAIL, zero ERROR, every profile certified. Both runs are child
 * processes of bin/tap-conform.mjs writing a JSON report. TAP_E2E_TIME_SCALE sets --time-scale
 * (default: from the load of the machine); TAP_E2E_SEED the seed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { b64u, newKey } from '../mac.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CONFORM = join(ROOT, 'bin/tap-conform.mjs');
const AGENT = join(ROOT, 'bin/tap-reference-agent.mjs');
const SCALE = Number(process.env.TAP_E2E_TIME_SCALE) || Math.min(4, Math.max(1, Math.ceil((loadavg()[0]! / Math.max(1, cpus().length)) * 2) / 2));
const SEED = process.env.TAP_E2E_SEED ?? '20250314';
const LIMIT_MS = 900_000 * SCALE;
const dir = mkdtempSync(join(tmpdir(), 'tap-conform-e2e-'));
const children: ChildProcess[] = [];

interface Report {
  certified: boolean;
  level: string;
  summary: Record<string, number>;
  cases: { id: string; verdict: string; detail: string }[];
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
  return r.cases.filter((c) => c.verdict === 'FAIL' || c.verdict === 'ERROR').map((c) => `${c.verdict} ${c.id}: ${c.detail}`);
}

afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

describe('the reference agent is certified (spec: conformance#verdicts)', () => {
  it('over stdio', { timeout: LIMIT_MS }, async () => {
    const json = join(dir, 'stdio.json');
    const r = await run(['--seed', SEED, '--time-scale', String(SCALE), '--json', json, AGENT]);
    const report = JSON.parse(readFileSync(json, 'utf8')) as Report;
    expect(problems(report), r.stderr).toEqual([]);
    expect(report.certified).toBe(true);
    expect(r.code).toBe(0);
  });

  it('over WebSocket', { timeout: LIMIT_MS }, async () => {
    const key = { TAP_HMAC_KEY_ID: 'e2e-key', TAP_HMAC_KEY: b64u(newKey()), TAP_HMAC_PEER: 'tap-conform.hmac' };
    const agent = spawn(process.execPath, [AGENT, '--listen', 'ws://127.0.0.1:0/tap'], { cwd: ROOT, env: { ...process.env, ...key }, stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(agent);
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      agent.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const line = out.split('\n').find((l) => l.startsWith('ws://'));
        if (line) resolve(line.trim());
      });
      agent.once('exit', (code) => reject(new Error(`the reference agent exited with ${code} before printing its URL`)));
    });
    const json = join(dir, 'ws.json');
    const r = await run([url, '--hmac-key-id', key.TAP_HMAC_KEY_ID, '--hmac-key', key.TAP_HMAC_KEY, '--hmac-peer', key.TAP_HMAC_PEER, '--seed', SEED, '--time-scale', String(SCALE), '--json', json]);
    agent.kill('SIGTERM');
    const report = JSON.parse(readFileSync(json, 'utf8')) as Report;
    expect(problems(report), r.stderr).toEqual([]);
    expect(report.cases.find((c) => c.id === 'resume.attachment.same-principal')?.verdict).toBe('PASS');
    expect(r.code).toBe(0);
  });
});
