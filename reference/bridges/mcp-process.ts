/**
 * An MCP server as a child process speaking newline-delimited JSON-RPC on its stdin and stdout,
 * shaped as the MCP SDK's client Transport. The server runs in a process group of its own, so
 * closing it reaches every process it started: first its stdin is closed, then the group gets
 * SIGTERM, then SIGKILL, each after a bounded wait; the bridge's exit kills what is left
 * (spec: bridge-mcp-server#shutdown).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** How the MCP server is started. */
export interface McpServerCommand {
  command: string;
  args: readonly string[];
  /** Its environment (default: the bridge's, without the TAP_* variables of a conformance run). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

/** How long each step of the close waits for the server to exit. */
export interface CloseWaits {
  /** After its stdin is closed (default 2 000 ms). */
  stdinMs: number;
  /** After SIGTERM (default 2 000 ms). */
  termMs: number;
}

export const DEFAULT_CLOSE_WAITS: CloseWaits = { stdinMs: 2_000, termMs: 2_000 };

/** How the server process ended: its exit code, or the signal that ended it. */
export interface McpExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** "exited with status 1", "was ended by SIGKILL". */
export function describeExit(exit: McpExit): string {
  return exit.signal !== null ? `was ended by ${exit.signal}` : `exited with status ${exit.code}`;
}

/** The bridge's environment without what a conformance run provisions for the bridge itself (its key among them). */
export function serverEnvironment(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([key]) => !key.startsWith('TAP_')));
}

/** Signals the process group of `pid`; false when no process of it is left. */
function signalGroup(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** The MCP server process as the SDK's client Transport. */
export class McpProcess implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** Resolves when the server process has exited. */
  readonly exited: Promise<McpExit>;
  /** How the process ended, once it has. */
  exit?: McpExit;
  private child?: ChildProcess;
  private buffer = '';
  private markExited!: (exit: McpExit) => void;
  private readonly killOnExit = (): void => {
    if (this.child?.pid !== undefined) signalGroup(this.child.pid, 'SIGKILL');
  };

  constructor(
    private readonly server: McpServerCommand,
    private readonly waits: CloseWaits = DEFAULT_CLOSE_WAITS,
  ) {
    this.exited = new Promise((resolve) => (this.markExited = resolve));
  }

  /** The server's process id, once started. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the process; rejects with a sentence for people when it cannot start. */
  start(): Promise<void> {
    const { command, args, env, cwd } = this.server;
    const child = spawn(command, [...args], {
      stdio: ['pipe', 'pipe', 'inherit'],
      detached: true,
      env: env ?? serverEnvironment(),
      ...(cwd !== undefined ? { cwd } : {}),
    });
    this.child = child;
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => this.read(chunk));
    // A server that stops reading is a failure the close and the exit report; the write error itself says nothing more.
    child.stdin?.on('error', () => {});
    return new Promise((resolve, reject) => {
      child.once('spawn', () => {
        process.on('exit', this.killOnExit);
        resolve();
      });
      child.once('error', (err: NodeJS.ErrnoException) => {
        const why = err.code === 'ENOENT' ? 'no such command' : err.code === 'EACCES' ? 'not executable' : err.message;
        reject(new Error(`${why}: check the command after --`));
      });
      child.once('exit', (code, signal) => {
        process.off('exit', this.killOnExit);
        this.exit = { code, signal };
        this.markExited(this.exit);
        this.onclose?.();
      });
    });
  }

  private read(chunk: string): void {
    this.buffer += chunk;
    for (let nl = this.buffer.indexOf('\n'); nl >= 0; nl = this.buffer.indexOf('\n')) {
      const text = this.buffer.slice(0, nl).replace(/\r$/, '');
      this.buffer = this.buffer.slice(nl + 1);
      if (text.trim() === '') continue;
      try {
        this.onmessage?.(JSON.parse(text) as JSONRPCMessage);
      } catch (err) {
        this.onerror?.(new Error(`the MCP server wrote a line that is not JSON-RPC: ${(err as Error).message}`));
      }
    }
  }

  /** Writes one message; rejects when the server no longer reads. */
  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || stdin.destroyed || this.exit) return Promise.reject(new Error('the MCP server is not running'));
    return new Promise((resolve, reject) => stdin.write(`${JSON.stringify(message)}\n`, (err) => (err ? reject(err) : resolve())));
  }

  /**
   * Closes the server the MCP way: its stdin, then SIGTERM to its process group, then SIGKILL,
   * each after a bounded wait; and then ends whatever of its group is still running.
   */
  async close(): Promise<void> {
    const child = this.child;
    if (!child || child.pid === undefined) return;
    const pid = child.pid;
    const waitExit = (ms: number): Promise<boolean> =>
      Promise.race([this.exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref())]);
    child.stdin?.end();
    if (!this.exit && !(await waitExit(this.waits.stdinMs))) {
      signalGroup(pid, 'SIGTERM');
      if (!(await waitExit(this.waits.termMs))) {
        signalGroup(pid, 'SIGKILL');
        await waitExit(this.waits.termMs);
      }
    }
    // Processes the server started and left behind in its group.
    if (signalGroup(pid, 0)) {
      signalGroup(pid, 'SIGTERM');
      await new Promise((r) => setTimeout(r, Math.min(200, this.waits.termMs)).unref());
      signalGroup(pid, 'SIGKILL');
    }
    process.off('exit', this.killOnExit);
  }
}
