import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { CloseInfo, InboundFrame, RawSendOptions, RawTransport } from './transport.ts';
import { LineReader } from './lines.ts';
import { DEFAULT_MAX_FRAME_BYTES } from './frame.ts';
import { StreamWriter, sendLine } from './writer.ts';

/** How a child process ended. */
export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the process never started. */
  error?: Error;
}

/** Options for `spawnStdioTransport`. */
export interface SpawnStdioOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** The child's stderr: shared with this process, kept in `stderrLines`, or handed over line by line (default 'inherit'). */
  stderr?: 'inherit' | 'pipe' | ((line: string) => void);
  /** The initial frame limit (default 16 MiB) until `setMaxFrameBytes`. */
  maxFrameBytes?: number;
  /** How long `close()` waits after ending stdin before it kills the child (default 10 000 ms). */
  closeGraceMs?: number;
  /** The signal sent when the grace period runs out (default 'SIGKILL'). */
  killSignal?: NodeJS.Signals;
  /** How many stderr lines `stderrLines` keeps, the latest ones (default 1000). */
  stderrLineLimit?: number;
  /**
   * Runs the child in its own process group: signals go to the whole group, and once the child
   * has exited whatever it left in the group is killed (default false).
   */
  processGroup?: boolean;
  /**
   * How long after the child's exit its pipes may stay open (held by a process it left behind)
   * before they are closed from this side and `onclose` fires (default: no limit).
   */
  pipeGraceMs?: number;
}

/** Process groups still alive, killed if this process exits first. */
const liveGroups = new Set<number>();
let exitHook = false;
function trackGroup(pid: number): void {
  liveGroups.add(pid);
  if (exitHook) return;
  exitHook = true;
  const killAll = (): void => {
    for (const group of liveGroups) killGroup(group, 'SIGKILL');
  };
  process.once('exit', killAll);
  // A group of its own no longer gets the terminal's signals: pass them on, then die of them as before.
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    if (process.listenerCount(sig) > 0) continue;
    process.once(sig, () => {
      killAll();
      process.kill(process.pid, sig);
    });
  }
}

/** Sends `signal` to process group `pid`; false when there is no such group. */
export function killGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

const LF = new Uint8Array([0x0a]);
const STDERR_LINE_BYTES = 64 * 1024;
const decoder = new TextDecoder();

/** Says what went wrong when a command could not be started, in one line. */
function startFailure(command: string, cwd: string | undefined, err: NodeJS.ErrnoException): Error {
  let what = err.message;
  if (err.code === 'ENOENT') {
    what = cwd !== undefined && !existsSync(cwd) ? `working directory ${cwd} does not exist` : 'no such file';
  } else if (err.code === 'EACCES') {
    what = 'permission denied (is it executable?)';
  }
  const error = new Error(`could not start agent: ${command}: ${what}`, { cause: err });
  (error as NodeJS.ErrnoException).code = err.code;
  return error;
}

/** Describes an exit for people: "exited with code 3", "killed by SIGKILL". */
export function describeExit(exit: ChildExit): string {
  if (exit.signal) return `killed by ${exit.signal}`;
  return `exited with code ${exit.code}`;
}

/**
 * The requester's end of the stdio binding: spawns the agent and speaks NDJSON over its
 * stdin and stdout (spec: bindings#stdio). Every stdout line is delivered as a frame, JSON
 * or not; diagnosing it is the decoder's job. `onclose` fires once the child has exited
 * and its output has ended, with code 1000 for exit status 0 and 1011 otherwise.
 */
export class ChildStdioTransport implements RawTransport {
  onmessage?: (frame: InboundFrame) => void;
  onclose?: (info: CloseInfo) => void;
  onerror?: (err: Error) => void;

  /** The spawned process, once `start()` has run. */
  child?: ChildProcess;
  /** The child's latest stderr lines when `stderr` is 'pipe'. */
  readonly stderrLines: string[] = [];
  /** Resolves when the child has exited (or failed to start). */
  readonly exited: Promise<ChildExit>;

  private exit?: ChildExit;
  private resolveExited!: (exit: ChildExit) => void;
  private readonly reader: LineReader;
  private writer?: StreamWriter;
  private starting?: Promise<void>;
  private closing?: Promise<void>;
  private closeFired = false;

  /** Prepares the child; nothing runs before `start()`. */
  constructor(
    readonly command: string,
    readonly args: readonly string[] = [],
    private readonly options: SpawnStdioOptions = {},
  ) {
    this.exited = new Promise((resolve) => (this.resolveExited = resolve));
    this.reader = new LineReader((frame) => this.onmessage?.(frame), options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES);
  }

  /** The exit status, or null while the child runs (or never started). */
  get exitCode(): number | null {
    return this.exit?.code ?? null;
  }

  /** Spawns the child; rejects with "could not start agent: <command>: <reason>" if it cannot run. */
  start(): Promise<void> {
    this.starting ??= this.spawnChild();
    return this.starting;
  }

  /** Writes `text` and a line feed to the child's stdin; dropped once the child is gone. */
  send(text: string): Promise<void> {
    return sendLine(this.writer, text);
  }

  /** Writes `data` and a line feed unchanged; stdio has no binary frames. */
  async sendRaw(data: Uint8Array, options: RawSendOptions = {}): Promise<void> {
    if (options.binary) throw new TypeError('stdio has no binary frames');
    await this.writer?.write(Buffer.concat([data, LF]));
  }

  /**
   * Ends the child's stdin (a graceful shutdown request), waits `closeGraceMs` for it to
   * exit, then sends `killSignal`; resolves once the child is gone. A close code means
   * nothing on stdio, so `info` is ignored.
   */
  close(_info?: CloseInfo): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  /** Sends a signal to the child (its whole group with `processGroup`) at once (default SIGTERM). */
  kill(signal: NodeJS.Signals = 'SIGTERM'): boolean {
    if (this.child === undefined) return false;
    if (this.options.processGroup && this.child.pid !== undefined && liveGroups.has(this.child.pid)) {
      return killGroup(this.child.pid, signal);
    }
    return this.exit === undefined && this.child.kill(signal);
  }

  /** With `processGroup`: kills what is left of the child's group; true when something was left. */
  killLeftovers(): boolean {
    const pid = this.child?.pid;
    if (!this.options.processGroup || pid === undefined) return false;
    const left = killGroup(pid, 'SIGKILL');
    liveGroups.delete(pid);
    return left;
  }

  /** Sets the negotiated `max_message_bytes` for the lines that follow. */
  setMaxFrameBytes(n: number): void {
    this.reader.setMaxFrameBytes(n);
  }

  private spawnChild(): Promise<void> {
    const { env, cwd, stderr = 'inherit' } = this.options;
    return new Promise<void>((resolve, reject) => {
      let child: ChildProcess;
      try {
        child = spawn(this.command, this.args, {
          env,
          cwd,
          stdio: ['pipe', 'pipe', stderr === 'inherit' ? 'inherit' : 'pipe'],
          detached: this.options.processGroup === true,
        });
      } catch (err) {
        const error = startFailure(this.command, cwd, err as NodeJS.ErrnoException);
        this.settle({ code: null, signal: null, error });
        reject(error);
        return;
      }
      this.child = child;
      let spawned = false;
      child.once('spawn', () => {
        spawned = true;
        if (this.options.processGroup && child.pid !== undefined) trackGroup(child.pid);
        resolve();
      });
      child.on('error', (err: NodeJS.ErrnoException) => {
        if (spawned) {
          this.onerror?.(err);
          return;
        }
        const error = startFailure(this.command, cwd, err);
        this.settle({ code: null, signal: null, error });
        reject(error);
      });
      this.writer = new StreamWriter(child.stdin!, {
        onGone: () => {},
        onError: (err) => this.onerror?.(err),
      });
      child.stdout!.on('data', (chunk: Buffer) => this.reader.push(chunk));
      child.stdout!.once('end', () => this.reader.end());
      child.stdout!.on('error', (err) => this.onerror?.(err));
      if (stderr !== 'inherit') this.readStderr(child, stderr);
      child.once('exit', (code, signal) => {
        this.settle({ code, signal });
        // The group outlives its leader only through what the leader left behind.
        if (this.options.processGroup) this.killLeftovers();
        const grace = this.options.pipeGraceMs;
        if (grace === undefined) return;
        const timer = setTimeout(() => {
          // A process outside the group still holds the pipes: stop reading them.
          child.stdout?.destroy();
          child.stderr?.destroy();
          this.reader.end();
          this.fireClose({ code: code === 0 ? 1000 : 1011, reason: `${describeExit({ code, signal })}; its output stayed open` });
        }, grace);
        timer.unref();
        child.once('close', () => clearTimeout(timer));
      });
      child.once('close', (code: number | null, signal: NodeJS.Signals | null) => {
        if (!spawned) return;
        this.settle({ code, signal });
        this.fireClose({ code: code === 0 ? 1000 : 1011, reason: describeExit({ code, signal }) });
      });
    });
  }

  private readStderr(child: ChildProcess, mode: 'pipe' | ((line: string) => void)): void {
    const limit = this.options.stderrLineLimit ?? 1000;
    const lines = new LineReader((frame) => {
      const line = decoder.decode(frame.bytes) + (frame.oversized ? '…' : '');
      if (typeof mode === 'function') {
        mode(line);
        return;
      }
      this.stderrLines.push(line);
      if (this.stderrLines.length > limit) this.stderrLines.splice(0, this.stderrLines.length - limit);
    }, STDERR_LINE_BYTES);
    child.stderr!.on('data', (chunk: Buffer) => lines.push(chunk));
    child.stderr!.once('end', () => lines.end());
    child.stderr!.on('error', (err) => this.onerror?.(err));
  }

  private async shutDown(): Promise<void> {
    if (this.starting === undefined) return;
    await this.starting.catch(() => {});
    if (this.exit?.error !== undefined) return;
    await this.writer?.end();
    const grace = this.options.closeGraceMs ?? 10_000;
    const timer = setTimeout(() => this.kill(this.options.killSignal ?? 'SIGKILL'), grace);
    await this.exited;
    clearTimeout(timer);
    await this.closed();
  }

  /** Resolves when `onclose` has fired (or the child never started). */
  private closed(): Promise<void> {
    if (this.closeFired || this.child === undefined || this.exit?.error) return Promise.resolve();
    return new Promise((resolve) => {
      this.child!.once('close', () => resolve());
      this.closeWaiters.push(resolve);
    });
  }

  private readonly closeWaiters: Array<() => void> = [];

  private settle(exit: ChildExit): void {
    if (this.exit !== undefined) return;
    this.exit = exit;
    this.resolveExited(exit);
  }

  private fireClose(info: CloseInfo): void {
    if (this.closeFired) return;
    this.closeFired = true;
    this.onclose?.(info);
    for (const resolve of this.closeWaiters.splice(0)) resolve();
  }
}

/** Prepares a child agent speaking TAP over stdio; call `start()` to spawn it. */
export function spawnStdioTransport(command: string, args: readonly string[] = [], options: SpawnStdioOptions = {}): ChildStdioTransport {
  return new ChildStdioTransport(command, args, options);
}
