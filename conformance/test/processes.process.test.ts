/**
 * The harness against agents that misbehave with processes (spec: conformance#processes): each
 * run must end within its time-outs and leave no process of the agent running.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CONFORM = join(ROOT, 'bin/tap-conform.mjs');
const HOSTILE = join(ROOT, 'fixtures/agents/hostile/agent.mjs');

/** Live processes whose environment carries `HOSTILE_TAG=tag`. */
function tagged(tag: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      if (readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').includes(`HOSTILE_TAG=${tag}`)) out.push(Number(name));
    } catch {
      // gone
    }
  }
  return out;
}

/** Runs tap-conform on the hostile agent in `mode`; kills it (and reports 'hung') after `limitMs`. */
function conform(mode: string, tag: string, extra: string[], limitMs: number): Promise<{ code: number | null; output: string } | 'hung'> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CONFORM, ...extra, '--only', 'core.handshake.complete', '--', 'node', HOSTILE, mode], {
      cwd: ROOT,
      env: { ...process.env, HOSTILE_TAG: tag, HOLD_MS: '90000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve('hung');
    }, limitMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

const cleanup = (tag: string) => {
  for (const pid of tagged(tag)) process.kill(pid, 'SIGKILL');
};

describe.skipIf(process.platform !== 'linux')('tap-conform and hostile agent processes (spec: conformance#processes)', () => {
  it('is not held up by a child of the agent that keeps its stdout open, and kills that child', async () => {
    const tag = randomBytes(6).toString('hex');
    try {
      const run = await conform('forker', tag, [], 80_000);
      expect(run).not.toBe('hung');
      expect(run).toMatchObject({ code: 0 });
      expect(tagged(tag)).toEqual([]);
    } finally {
      cleanup(tag);
    }
  }, 100_000);

  it('kills a grandchild that left the process group', async () => {
    const tag = randomBytes(6).toString('hex');
    try {
      const run = await conform('daemon', tag, [], 80_000);
      expect(run).toMatchObject({ code: 0 });
      expect(tagged(tag)).toEqual([]);
    } finally {
      cleanup(tag);
    }
  }, 100_000);

  it('reports an agent that never answers as hung, not as having closed the connection', async () => {
    const tag = randomBytes(6).toString('hex');
    try {
      const run = await conform('hang', tag, ['--time-scale', '0.1'], 80_000);
      expect(run).toMatchObject({ code: 3 });
      const output = (run as { output: string }).output;
      expect(output).toMatch(/hung/);
      expect(output).not.toMatch(/closed the connection/);
      expect(tagged(tag)).toEqual([]);
    } finally {
      cleanup(tag);
    }
  }, 100_000);
});
