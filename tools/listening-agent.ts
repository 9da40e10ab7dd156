/**
 * Starts a command that serves TAP over WebSocket and resolves once it prints its ws:// URL on
 * standard output, as `tap-reference-agent --listen` does. Rejects when the command exits first,
 * or stays silent for `timeoutMs` (and is then killed).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface Listening {
  url: string;
  child: ChildProcess;
}

export interface ListenOptions {
  cwd: string;
  env?: NodeJS.ProcessEnv;
  /** Where the command's standard error goes (default: inherited). */
  stderr?: 'inherit' | 'ignore' | number;
  /** Default 60 s. */
  timeoutMs?: number;
}

/** `command` is an argv; a leading "node" runs on this process's Node. */
export function startListening(command: readonly string[], o: ListenOptions): Promise<Listening> {
  const [file, ...args] = command;
  const what = command.join(' ');
  const child = spawn(file === 'node' ? process.execPath : file!, args, {
    cwd: o.cwd,
    env: o.env ?? process.env,
    stdio: ['ignore', 'pipe', o.stderr ?? 'inherit'],
  });
  const timeoutMs = o.timeoutMs ?? 60_000;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${what} printed no ws:// URL within ${timeoutMs / 1000} s`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with ${code} before printing its URL`));
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const url = /^wss?:\/\/\S+/.exec(line.trim())?.[0];
      if (!url) return;
      clearTimeout(timer);
      resolve({ url, child });
    });
  });
}
