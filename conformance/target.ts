/**
 * The agent under test: a command spawned per connection (stdio), a WebSocket URL connected
 * to per connection, or an agent id behind a NATS server, opened per connection; or a target that
 * opens its own connections (an agent in this process, the mailbox pairs of the workspace
 * binding). Opening never speaks TAP; it only yields a Transport.
 */
import { existsSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { connectWebSocket } from '../reference/transports/websocket.ts';
import { spawnStdioTransport, type ChildExit } from '../reference/transports/stdio-child.ts';
import type { TlsOptions } from '../reference/transports/tls.ts';
import type { RawTransport } from '../reference/transports/transport.ts';
import type { HmacKey } from './session-state.ts';
import { forget, killMarkedAndWait, MARKER_VAR, newMarker, track } from './leftovers.ts';
import { b64u } from './mac.ts';

/** The bindings a command-line target speaks: the rules its connections follow. */
export type Binding = 'stdio' | 'websocket' | 'nats';

/** An agent the command line names, reached over one of TAP's bindings. */
export type BindingTarget =
  | { kind: 'stdio'; command: string; args: string[]; display: string }
  | { kind: 'websocket'; url: string; display: string; tls?: TlsOptions }
  | { kind: 'nats'; url: string; display: string; tls?: TlsOptions };

/**
 * A target that opens its own connections: `memory`, an agent in this process on memory pairs
 * (the harness's own tests); `workspace`, the mailbox pairs of the workspace binding
 * (conformance/workspace).
 */
export type OpeningTarget = ({ kind: 'memory' } & Opening) | ({ kind: 'workspace' } & Opening);

/** What an opening target has besides its kind. */
interface Opening {
  display: string;
  open(o: OpenOptions): Promise<Connection>;
}

export type TargetSpec = BindingTarget | OpeningTarget;

/**
 * The binding whose rules a target's connections follow. Memory pairs and mailbox pairs carry
 * whole messages, one per frame, and give each session a connection of its own that can be
 * dropped and resumed: the cases treat them as WebSocket connections.
 */
export function bindingOf(target: TargetSpec): Binding {
  return target.kind === 'memory' || target.kind === 'workspace' ? 'websocket' : target.kind;
}

/** The TLS material a target's connections present: a WebSocket or NATS target's, none for the others. */
export function targetTls(target: TargetSpec): TlsOptions | undefined {
  return target.kind === 'websocket' || target.kind === 'nats' ? target.tls : undefined;
}

/** An open connection to the agent, not yet started. */
export interface Connection {
  transport: RawTransport;
  /** stdio only: resolves when the process exits. */
  exited?: Promise<ChildExit>;
  /** stdio only: sends a signal to the process. */
  kill?: (signal: NodeJS.Signals) => boolean;
  /** stdio only: the process id. */
  pid?: number;
  /**
   * stdio only: kills what the agent left running (its process group, and processes that carry
   * its marker after leaving the group) and waits until they are gone; resolves with how many
   * processes were left.
   */
  reap?: () => Promise<number>;
}

/** Closes a connection nothing else will close, and kills what a spawned agent left running. */
export async function abandonConnection(c: Connection): Promise<void> {
  await c.transport.close().catch(() => {});
  c.kill?.('SIGKILL');
  await c.reap?.();
}

export interface OpenOptions {
  /** Extra environment for a spawned agent. */
  env?: Record<string, string>;
  /** Working directory of a spawned agent (default: the harness's). */
  cwd?: string;
  /** Receives each line of a spawned agent's stderr. */
  onStderr?: (line: string) => void;
  /** Subprotocols to offer (WebSocket; default ["tap.v1"]). */
  protocols?: string[];
  /** How long closing waits for a spawned agent to exit before killing it. */
  closeGraceMs?: number;
  /** Replaces "{state}" in a spawned agent's arguments: the folder where it keeps what must survive a restart. */
  stateDir?: string;
  /** How long a spawned agent's pipes may stay open after it exited (default 2000 ms). */
  pipeGraceMs?: number;
  /** TLS of this connection instead of the target's (another client certificate, or none). */
  tls?: TlsOptions;
  /** How long opening a WebSocket or NATS connection may take (default CONNECT_TIMEOUT_MS; a run scales it by --time-scale). */
  connectTimeoutMs?: number;
}

/** How long opening a WebSocket or NATS connection may take at --time-scale 1. */
export const CONNECT_TIMEOUT_MS = 5000;

/** The placeholder a stdio command may carry for a per-case state folder, e.g. --state-dir {state}. */
export const STATE_PLACEHOLDER = '{state}';

/** Thrown when the agent cannot be started or reached at all (exit code 3). */
export class CannotRun extends Error {
  override name = 'CannotRun';
}

/** The variable that asks an agent to offer the conformance capabilities (spec: conformance#test-capabilities). */
export const CONFORMANCE_VAR = 'TAP_CONFORMANCE';

/**
 * The variable that starts the agent of one case with a shorter max_task_seconds, so that a task
 * can be seen to outlive it (spec: conformance#case-limits).
 */
export const MAX_TASK_VAR = 'TAP_MAX_TASK_SECONDS';

/**
 * The environment of a spawned agent before its case adds to it: the harness's own, with
 * TAP_CONFORMANCE=1 and without a conformance key of the harness's environment (a case that wants
 * a key provisions its own; spec: conformance#key-provisioning).
 */
export function agentEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { TAP_HMAC_KEY_ID: _id, TAP_HMAC_KEY: _key, TAP_HMAC_PEER: _peer, ...rest } = env;
  return { ...rest, [CONFORMANCE_VAR]: '1' };
}

/** The environment that provisions the run's HMAC key to a spawned agent (spec: integrity#key-provisioning). */
export function keyEnv(key: HmacKey | undefined): Record<string, string> {
  if (!key) return {};
  return { TAP_HMAC_KEY_ID: key.keyId, TAP_HMAC_KEY: b64u(key.key), TAP_HMAC_PEER: key.peer };
}

/**
 * Resolves the command of a stdio target: a path (it contains a slash) must exist and be a file;
 * a bare name is looked up on PATH by the spawn itself.
 */
export function checkCommand(command: string): string | null {
  if (!command.includes('/')) return null;
  const path = isAbsolute(command) ? command : resolve(command);
  if (!existsSync(path)) return `${command}: no such file`;
  if (statSync(path).isDirectory()) return `${command} is a directory, not an executable`;
  return null;
}

/** Commands that start the agent as their own child and do not pass signals on to it. */
const LAUNCHERS = new Set(['npx', 'npm', 'pnpm', 'yarn', 'bunx', 'sh', 'bash']);

/**
 * The launcher a stdio target starts the agent through (npx, npm, a shell), or null: a signal the
 * harness sends reaches the launcher, not the agent.
 */
export function launcherOf(target: TargetSpec): string | null {
  if (target.kind !== 'stdio') return null;
  const name = target.command.split('/').pop()!;
  return LAUNCHERS.has(name) ? name : null;
}

/** Opens one connection to the target. Rejects with a one-line reason when it cannot. */
export async function openConnection(target: TargetSpec, o: OpenOptions = {}): Promise<Connection> {
  if (target.kind === 'memory' || target.kind === 'workspace') return target.open(o);
  if (target.kind === 'websocket') {
    const tls = o.tls ?? target.tls;
    const transport = await connectWebSocket(target.url, {
      protocols: o.protocols,
      handshakeTimeout: o.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
      ...(tls ? { tls } : {}),
    });
    return { transport };
  }
  if (target.kind === 'nats') {
    const { connectNatsTransport } = await import('../reference/transports/nats/connect.ts');
    const tls = o.tls ?? target.tls;
    const transport = await connectNatsTransport(target.url, {
      timeoutMs: o.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
      ...(tls ? { tls } : {}),
    });
    return { transport };
  }
  const command = target.command.includes('/') ? resolve(target.command) : target.command;
  const args = target.args.map((a) => (o.stateDir !== undefined ? a.split(STATE_PLACEHOLDER).join(o.stateDir) : a));
  // Its own process group, killed as a whole; a marker finds what leaves the group (spec: conformance#processes).
  const marker = newMarker();
  const child = spawnStdioTransport(command, args, {
    env: { ...agentEnvironment(process.env), ...(o.env ?? {}), [MARKER_VAR]: marker },
    cwd: o.cwd,
    stderr: o.onStderr ?? 'pipe',
    closeGraceMs: o.closeGraceMs ?? 3000,
    processGroup: true,
    pipeGraceMs: o.pipeGraceMs ?? 2000,
  });
  track(marker);
  await child.start();
  return {
    transport: child,
    exited: child.exited,
    kill: (signal) => child.kill(signal),
    pid: child.child?.pid,
    reap: async () => {
      const left = await killMarkedAndWait(marker);
      child.killLeftovers();
      forget(marker);
      return left;
    },
  };
}
