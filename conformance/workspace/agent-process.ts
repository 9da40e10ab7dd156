/**
 * The workspace agent under test as one long-lived process: started once per run with the
 * workspace and its agent id (in TAP_WORKSPACE / TAP_AGENT_ID and in the `{workspace}` /
 * `{agent_id}` placeholders of its command), in a process group of its own so that a signal,
 * a pause or a kill reaches a wrapper and the agent behind it alike.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { agentEnvironment } from '../target.ts';

/** How the process ended. */
export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** How to start the agent. */
export interface AgentProcessOptions {
  command: string;
  args: readonly string[];
  workspace: string;
  agentId: string;
  /** Extra environment (the run's HMAC key, for instance). */
  env?: Record<string, string>;
  cwd?: string;
  /** Receives every line the agent writes on stdout or stderr (stdout is no TAP channel here). */
  onLine?: (stream: 'stdout' | 'stderr', line: string) => void;
}

/** Replaces `{workspace}` and `{agent_id}` in one argument. */
export function substitute(arg: string, workspace: string, agentId: string): string {
  return arg.replaceAll('{workspace}', workspace).replaceAll('{agent_id}', agentId);
}

/** A running agent process. */
export class AgentProcess {
  readonly exited: Promise<ProcessExit>;
  private exit: ProcessExit | null = null;
  private paused = false;
  private readonly tail: string[] = [];

  private constructor(private readonly child: ChildProcess) {
    this.exited = new Promise((res) => child.on('exit', (code, signal) => res((this.exit = { code, signal }))));
  }

  /** Spawns the agent; rejects when the command cannot be started at all. */
  static async start(o: AgentProcessOptions): Promise<AgentProcess> {
    const command = substitute(o.command, o.workspace, o.agentId);
    const child = spawn(
      command.includes('/') ? resolve(command) : command,
      o.args.map((a) => substitute(a, o.workspace, o.agentId)),
      {
        cwd: o.cwd,
        env: { ...agentEnvironment(process.env), ...(o.env ?? {}), TAP_WORKSPACE: o.workspace, TAP_AGENT_ID: o.agentId },
        // stdin stays open and silent: an agent that reads it never sees the end of its input.
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
      },
    );
    const p = new AgentProcess(child);
    for (const stream of ['stdout', 'stderr'] as const) {
      let buf = '';
      child[stream]!.setEncoding('utf8').on('data', (chunk: string) => {
        buf += chunk;
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          p.line(stream, buf.slice(0, i), o.onLine);
          buf = buf.slice(i + 1);
        }
      });
    }
    child.stdin!.on('error', () => {});
    await new Promise<void>((res, rej) => {
      child.once('spawn', () => res());
      child.once('error', (err) => rej(err));
    });
    return p;
  }

  private line(stream: 'stdout' | 'stderr', text: string, onLine: AgentProcessOptions['onLine']): void {
    this.tail.push(`${stream}: ${text}`);
    if (this.tail.length > 40) this.tail.shift();
    onLine?.(stream, text);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** True while the process runs. */
  alive(): boolean {
    return this.exit === null;
  }

  /** How it ended, or null while it runs. */
  exitStatus(): ProcessExit | null {
    return this.exit;
  }

  /** The last lines of its output, for diagnoses. */
  lastLines(n = 5): string[] {
    return this.tail.slice(-n);
  }

  /** Sends a signal to the agent's whole process group. */
  signal(sig: NodeJS.Signals): void {
    if (!this.alive()) return;
    try {
      process.kill(-this.pid, sig);
    } catch {
      this.child.kill(sig);
    }
  }

  /** Freezes the agent (SIGSTOP): it neither renews leases nor reads mailboxes until resumed. */
  pause(): void {
    this.paused = true;
    this.signal('SIGSTOP');
  }

  /** Lets a paused agent run again. */
  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.signal('SIGCONT');
  }

  /** Resolves with the exit, or null after `ms`. */
  async waitExit(ms: number): Promise<ProcessExit | null> {
    if (this.exit) return this.exit;
    let timer: NodeJS.Timeout | undefined;
    const r = await Promise.race([this.exited, new Promise<null>((res) => (timer = setTimeout(() => res(null), ms)))]);
    clearTimeout(timer);
    return r;
  }

  /** Kills whatever is left of the process group (a wrapper's children, for instance). */
  killGroup(): void {
    try {
      process.kill(-this.pid, 'SIGKILL');
    } catch {
      // the group is gone already
    }
  }

  /** SIGTERM (and end of input), then SIGKILL after `graceMs`; resolves with the exit. */
  async stop(graceMs: number): Promise<ProcessExit> {
    this.resume();
    if (!this.alive()) return this.exit!;
    this.child.stdin?.end();
    this.signal('SIGTERM');
    const done = await this.waitExit(graceMs);
    if (done) return done;
    this.signal('SIGKILL');
    return this.exited;
  }
}
