/** What the tarball checks share: running a command to its end, and listing a folder's files. */
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/** One check against the installed project: its name, and a run that resolves with a note or throws with the reason. */
export type Check = [name: string, run: () => Promise<string | undefined>];

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (killed after `timeoutMs`), collecting its output. */
export function run(cmd: string, args: string[], opts: { cwd: string; timeoutMs?: number; env?: NodeJS.ProcessEnv }): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      stderr += `\n(killed after ${opts.timeoutMs} ms)`;
      child.kill('SIGKILL');
    }, opts.timeoutMs ?? 120_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ code: 127, stdout, stderr: `${stderr}${err.message}` });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export function ok(r: RunResult, what: string): RunResult {
  if (r.code !== 0) throw new Error(`${what} exited ${r.code}: ${(r.stderr || r.stdout).trim().split('\n').slice(-6).join(' | ')}`);
  return r;
}

/** Every file under `dir` with its size and modification time, for "nothing was written" checks. */
export function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else out.set(relative(dir, p), `${st.size}:${st.mtimeMs}`);
    }
  };
  walk(dir);
  return out;
}
