/**
 * Test support for the workspace binding: scratch directories (on tmpfs when there is one, where
 * fsync costs nothing and every code path stays the same), polling waits, and child processes
 * that run TypeScript scripts and report JSON lines.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, promises as fsp } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compiledScript } from '../../test/compiled.testkit.ts';
import { initWorkspace, type Workspace } from './workspace.ts';
import { afterEach } from 'vitest';

/** The directory of this module. */
export const HERE = dirname(fileURLToPath(import.meta.url));

/** Where scratch workspaces go: $TAP_TEST_TMP, else /dev/shm when writable, else the OS temp dir. */
export function scratchBase(): string {
  if (process.env.TAP_TEST_TMP) return process.env.TAP_TEST_TMP;
  try {
    accessSync('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
}

/** A fresh empty directory. */
export async function scratchDir(prefix = 'tap-ws-'): Promise<string> {
  return fsp.mkdtemp(join(scratchBase(), prefix));
}

/** A fresh workspace in a scratch directory that `cleanups` removes (spec: bindings-workspace#layout). */
export async function scratchWorkspace(
  cleanups: Array<() => Promise<unknown>>,
  settings: Parameters<typeof initWorkspace>[1] = {},
): Promise<Workspace> {
  const root = await scratchDir();
  cleanups.push(() => fsp.rm(root, { recursive: true, force: true }));
  return (await initWorkspace(root, settings)).workspace;
}

/** Polls `cond` every 20 ms until it holds; rejects after `timeoutMs` naming `what`. */
export async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A child process running a TypeScript script, with its stdout JSON lines collected. */
export interface ScriptChild {
  child: ChildProcess;
  /** Every JSON line printed on stdout so far. */
  lines: Array<Record<string, unknown>>;
  /** Everything printed on stderr so far. */
  stderr: () => string;
  /** Resolves with the exit code (or signal name) once the process has ended. */
  exited: Promise<number | string>;
  /** Resolves with the first line that `match` accepts. */
  line(match: (l: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
}

/** Runs `node <script> ...args`, the script compiled (test/compiled.testkit.ts). */
export function runScript(script: string, args: string[], env: Record<string, string> = {}): ScriptChild {
  const child = spawn(process.execPath, [compiledScript(script), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  const lines: Array<Record<string, unknown>> = [];
  let err = '';
  let buf = '';
  const waiters: Array<() => void> = [];
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    buf += chunk;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const text = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        lines.push(JSON.parse(text) as Record<string, unknown>);
      } catch {
        lines.push({ text });
      }
      for (const w of waiters.splice(0)) w();
    }
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  return {
    child,
    lines,
    stderr: () => err,
    exited,
    async line(match, timeoutMs = 20_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const found = lines.find(match);
        if (found) return found;
        if (Date.now() > end || child.exitCode !== null || child.signalCode !== null) {
          throw new Error(`no matching line from ${script} (exit ${child.exitCode ?? child.signalCode}); stderr:\n${err}`);
        }
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 50);
        });
      }
    },
  };
}

/** Sends SIGTERM and waits for the exit; SIGKILL after `graceMs`. */
export async function stopChild(c: ScriptChild, graceMs = 5000): Promise<number | string> {
  if (c.child.exitCode !== null || c.child.signalCode !== null) return c.exited;
  c.child.kill('SIGTERM');
  const timer = setTimeout(() => c.child.kill('SIGKILL'), graceMs);
  const code = await c.exited;
  clearTimeout(timer);
  return code;
}

/**
 * Clean-ups run after each test of the calling file, newest first, and scratch roots that they
 * remove: `const { cleanups, root } = cleanupAfterEach();` at the top of a test file.
 */
export function cleanupAfterEach(): { cleanups: Array<() => Promise<unknown>>; root: () => Promise<string> } {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
  });
  const root = async (): Promise<string> => {
    const dir = await scratchDir();
    cleanups.push(() => fsp.rm(dir, { recursive: true, force: true }));
    return dir;
  };
  return { cleanups, root };
}
