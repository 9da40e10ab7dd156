/**
 * How a workspace agent is started and what it reports: its options, the handle it returns and
 * the events it emits (spec: bindings-workspace).
 */
import type { AgentCard } from '../../schemas/src/index.ts';
import type { Approval } from './approval.ts';
import type { PhaseHandler } from './phase-handler.ts';
import type { ReapAction } from './reaper.ts';
import type { Workspace } from './workspace.ts';

/** Something the runner did, for logs, tests and tools. */
export type RunnerEvent =
  | { type: 'claimed'; task_id: string; epoch: number; phase: string }
  | {
      type: 'finished';
      task_id: string;
      epoch: number;
      phase: string;
      status: string;
      dir: string;
      error?: { code: string; message: string };
    }
  | { type: 'lost'; task_id: string; epoch: number; phase: string }
  | { type: 'rejected'; task_id: string; epoch: number; code: string; message: string }
  | { type: 'awaiting'; task_id: string; epoch: number; phase: string; plan_id: string }
  | { type: 'decision_refused'; task_id: string; state: Approval['state']; message: string }
  | { type: 'released'; task_id: string; epoch: number; reason: string }
  | { type: 'reaped'; action: ReapAction }
  | { type: 'unreadable'; path: string; moved_to: string; reason: string }
  | { type: 'error'; message: string };

/** Options of runWorkspaceAgent. */
export interface WorkspaceAgentOptions {
  /** The workspace directory, or an open workspace. */
  workspace: string | Workspace;
  agentId: string;
  /** The phases served: names (all run by `handler`), or a handler per phase. */
  phases: string[] | Record<string, PhaseHandler>;
  /** The handler of every phase named in `phases` when it is a list. */
  handler?: PhaseHandler;
  /** Card members to publish (agent_id, capabilities and limits are filled in). */
  card?: Partial<AgentCard>;
  /** Rescan period of `pending/` when no file event arrives (default 1000 ms). */
  pollMs?: number;
  /** Phases run at once (default 1). */
  concurrency?: number;
  /** Whether this agent also reaps expired claims (default true). */
  reap?: boolean;
  /** Aborting it shuts the agent down. */
  signal?: AbortSignal;
  /** Shut down on SIGTERM and SIGINT (default false; a process that runs one agent sets it). */
  handleSignals?: boolean;
  /** How long an interrupted handler may take to return at shutdown, cancel or timeout (default 5000 ms). */
  graceMs?: number;
  logger?: (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;
  onEvent?: (event: RunnerEvent) => void;
  /** A monotonic clock for the reaper (default performance.now). */
  now?: () => number;
}

/** A running workspace agent. */
export interface WorkspaceAgent {
  readonly agentId: string;
  readonly workspace: Workspace;
  /** Stops claiming, interrupts and releases running phases, marks the agent stopped; idempotent. */
  stop(reason?: string): Promise<void>;
  /** Resolves once the agent has stopped. */
  readonly stopped: Promise<void>;
  /** Claims held right now, as `<task_id>@<epoch>`. */
  holding(): string[];
  /** Triggers a scan of `pending/` now. */
  poke(): void;
}
