/**
 * Child processes for the scenarios: plain `node` on compiled JavaScript, as users run the package
 * (no TypeScript loader in any child); a wait for their first line on stdout, their resident
 * memory, and a bounded stop.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { bundleScripts } from './bundle.ts';
import { BENCH, ROOT } from './paths.ts';

/** Where the peer scripts are compiled to, once per run. */
const PEERS_OUT = join(ROOT, 'node_modules', '.cache', 'tap', 'bench-peers');
const compiled = new Map<string, string>();

/**
 * Compiles each script of bench/peers/ to one JavaScript file: the bench's own code bundled in,
 * the package taken from dist/ (npm run build) and dependencies from node_modules (bundle.ts). Run
 * once before the first child starts.
 */
export async function compilePeers(): Promise<void> {
  const scripts = readdirSync(join(BENCH, 'peers')).filter((f) => f.endsWith('.ts'));
  await bundleScripts(Object.fromEntries(scripts.map((f) => [basename(f, '.ts'), join(BENCH, 'peers', f)])), PEERS_OUT);
  for (const f of scripts) compiled.set(join(BENCH, 'peers', f), join(PEERS_OUT, basename(f, '.ts') + '.mjs'));
}

/** The argv that runs a script: its compiled form for a peer in TypeScript (see compilePeers), the file itself for JavaScript. */
export function nodeArgs(file: string, args: readonly string[] = []): string[] {
  if (!file.endsWith('.ts')) return [file, ...args];
  const out = compiled.get(file);
  if (!out) throw new Error(`${file} is not compiled: the bench compiles bench/peers/ before it starts a child (compilePeers)`);
  return [out, ...args];
}

/** Spawns the compiled build of a module of the package (`dist/<file>.js`), as an installed package runs it. */
export function spawnCompiled(file: string, args: readonly string[] = [], env: NodeJS.ProcessEnv = {}): LineChild {
  const compiled = join(ROOT, 'dist', file.replace(/\.ts$/, '.js'));
  if (!existsSync(compiled)) throw new Error(`${compiled} is missing: run npm run build first`);
  const child = spawn(process.execPath, [compiled, ...args], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  return watchLines(child);
}

/** A running child whose stdout is read line by line. */
export interface LineChild {
  child: ChildProcess;
  /** Resolves with the first stdout line that `match` accepts; rejects on exit or after `ms`. */
  line(match: (line: string) => boolean, ms: number, what: string): Promise<string>;
  /** The last stderr output (up to 4 KiB), for error messages. */
  stderr(): string;
  /** Ends the child: SIGTERM, then SIGKILL after `graceMs`; resolves once it exited. */
  stop(graceMs?: number): Promise<void>;
}

/** Spawns `node <file> args` (see nodeArgs) in the repository root with stdout read as lines. */
export function spawnScript(file: string, args: readonly string[] = [], env: NodeJS.ProcessEnv = {}): LineChild {
  const child = spawn(process.execPath, nodeArgs(file, args), {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  return watchLines(child);
}

/** Reads a spawned child's stdout as lines (stdin, stdout and stderr must be pipes). */
export function watchLines(child: ChildProcess): LineChild {
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  let err = '';
  let buf = '';
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      for (const w of waiters) w();
      resolve();
    }),
  );
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    buf += chunk;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      lines.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
    for (const w of waiters) w();
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    err = (err + chunk).slice(-4096);
  });
  child.on('error', () => {});
  child.stdin?.on('error', () => {});
  return {
    child,
    stderr: () => err,
    line(match, ms, what) {
      return new Promise((resolve, reject) => {
        let seen = 0;
        const check = (): void => {
          for (; seen < lines.length; seen++) {
            if (match(lines[seen]!)) {
              done();
              resolve(lines[seen]!);
              return;
            }
          }
          if (exited) {
            done();
            reject(new Error(`${what}: the process exited first${err ? ` (${lastLine(err)})` : ''}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`${what}: nothing after ${ms} ms${err ? ` (${lastLine(err)})` : ''}`));
        }, ms);
        const done = (): void => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    async stop(graceMs = 3000) {
      if (exited || child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exit;
      clearTimeout(timer);
    },
  };
}

function lastLine(text: string): string {
  const lines = text.trim().split('\n');
  return lines[lines.length - 1]!.slice(0, 300);
}

/** The resident set size of a process in bytes, from /proc (Linux); null elsewhere. */
export function rssOf(pid: number): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Waits `ms` milliseconds. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Races `promise` against a timer; rejects with `what` after `ms`. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
    }),
  ]);
}

/** Waits for each child's "ready" line, for up to `ms`; stops them all if one does not come. */
export async function started(children: LineChild[], what: string, ms = 60_000): Promise<void> {
  try {
    await Promise.all(children.map((c, i) => c.line((l) => l === 'ready', ms, `${what} ${i} starting`)));
  } catch (err) {
    await Promise.all(children.map((c) => c.stop(1000)));
    throw err;
  }
}
