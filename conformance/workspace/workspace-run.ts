/**
 * One certification run over the workspace binding: the workspace the harness initialises, the
 * agent process started once in it, what the harness observes of the task directories, and the
 * mailbox connections the message-protocol cases open (spec: bindings-workspace).
 */
import { existsSync, promises as fsp, watch } from 'node:fs';
import { join, resolve } from 'node:path';
import { initWorkspace, type Workspace } from '../../reference/workspace/index.ts';
import type { Connection, OpenOptions } from '../target.ts';
import { CannotRun } from '../target.ts';
import { AgentProcess } from './agent-process.ts';
import { MailboxConnections } from './mailbox-connection.ts';
import { DirObserver, poll } from './observe.ts';
import { PHASES, publishRecord, record } from './records.ts';
import type { WorkspaceOptions } from './options.ts';

/** The marker that tells a directory was initialised by tap-conform, so a later run may clear it. */
export const MARKER = '.tap-conform';

/** What the harness saw while the agent started. */
export interface Startup {
  /** The task submitted before the agent started. */
  seededTask: string;
  /** Whether card.json and state.json existed when the seeded task was first seen claimed (null: not claimed yet). */
  publishedBeforeClaim: { card: boolean; state: boolean } | null;
  /** The phases state.json listed. */
  phases: string[];
  /** How long the agent took to publish state.json, in ms. */
  startupMs: number;
}

/** Settings of a run. */
export interface RunSettings {
  options: WorkspaceOptions;
  command: string;
  args: readonly string[];
  /** Extra environment for the agent (the run's key). */
  env: Record<string, string>;
  timeScale: number;
  /** The harness's id; mailbox senders are `<selfId>.c<n>`. */
  selfId: string;
  /** Receives the agent's output lines (for --debug). */
  onLine?: (stream: 'stdout' | 'stderr', line: string) => void;
}

/** Makes `dir` ready: created when missing, refused when it holds anything but an earlier run's workspace. */
export async function prepareDir(dir: string): Promise<string> {
  const root = resolve(dir);
  const names = await fsp.readdir(root).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return null;
    throw new CannotRun(`cannot use ${root} as the workspace: ${err.code ?? err.message}`);
  });
  if (names === null) {
    await fsp.mkdir(root, { recursive: true });
  } else if (names.length > 0) {
    if (!names.includes(MARKER)) {
      throw new WorkspaceDirInUse(`${root} is not empty; give a new or empty directory (the harness initialises the workspace itself)`);
    }
    for (const name of names) await fsp.rm(join(root, name), { recursive: true, force: true });
  }
  await fsp.writeFile(join(root, MARKER), 'A workspace initialised by tap-conform; a later run clears this directory.\n');
  return root;
}

/** The directory given cannot be used (exit 2). */
export class WorkspaceDirInUse extends Error {
  override name = 'WorkspaceDirInUse';
}

/** A run's workspace, agent and observations. */
export class WorkspaceRun {
  readonly mail: MailboxConnections;
  readonly observer: DirObserver;
  /** Set once a case has stopped the agent on purpose. */
  stoppedOnPurpose = false;
  private ids = 0;

  private constructor(
    readonly settings: RunSettings,
    readonly ws: Workspace,
    readonly agent: AgentProcess,
    readonly startup: Startup,
    observer: DirObserver,
  ) {
    this.observer = observer;
    this.mail = new MailboxConnections(ws.root, settings.options.agentId, settings.selfId);
    void agent.exited.then(async (exit) => {
      const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
      // What the agent wrote last (a farewell) is still read before the connections count as closed.
      await this.mail.drain(500);
      await this.mail.closeAll(`the agent process ${how}`);
    });
  }

  /** Initialises the workspace, submits one task, starts the agent and waits for its agents/<id>/state.json. */
  static async start(s: RunSettings): Promise<WorkspaceRun> {
    const root = await prepareDir(s.options.dir);
    const o = s.options;
    const { workspace: ws } = await initWorkspace(root, {
      lease_ms: o.leaseMs,
      max_attempts: o.maxAttempts,
      history_limit: o.historyLimit,
      claim_mode: o.claimMode,
    });
    const seededTask = 'startup-probe';
    await publishRecord(ws, 'pending', record(seededTask, PHASES.echo, { startup: true }));
    const observer = new DirObserver({
      pending: ws.paths.dir('pending'),
      processing: ws.paths.dir('processing'),
      completed: ws.paths.dir('completed'),
      failed: ws.paths.dir('failed'),
      awaiting: ws.paths.dir('awaiting'),
    });
    const agentDir = ws.paths.agent(o.agentId);
    let publishedBeforeClaim: Startup['publishedBeforeClaim'] = null;
    const look = (name: string | null) => {
      if (publishedBeforeClaim || typeof name !== 'string' || !name.startsWith(`${seededTask}@`)) return;
      publishedBeforeClaim = { card: existsSync(join(agentDir, 'card.json')), state: existsSync(join(agentDir, 'state.json')) };
    };
    // spec: bindings-workspace#agents — the claim of the task waiting at start-up shows whether card and state came first.
    const claimWatch = watch(ws.paths.dir('processing'), (_e, name) => look(typeof name === 'string' ? name : null));
    claimWatch.on('error', () => claimWatch.close());
    const t0 = performance.now();
    let agent: AgentProcess;
    try {
      agent = await AgentProcess.start({
        command: s.command,
        args: s.args,
        workspace: root,
        agentId: o.agentId,
        env: s.env,
        onLine: s.onLine,
      });
    } catch (err) {
      claimWatch.close();
      observer.close();
      throw new CannotRun(`could not start ${s.command}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    const statePath = join(agentDir, 'state.json');
    const limit = 30_000 * s.timeScale;
    const phases = await poll(async () => {
      if (!agent.alive()) return 'exited' as const;
      const text = await fsp.readFile(statePath, 'utf8').catch(() => null);
      if (text === null) return null;
      try {
        const st = JSON.parse(text) as { phases?: unknown };
        return Array.isArray(st.phases) ? st.phases.filter((p): p is string => typeof p === 'string') : [];
      } catch {
        return null;
      }
    }, limit);
    const startupMs = performance.now() - t0;
    if (phases === null || phases === 'exited') {
      claimWatch.close();
      observer.close();
      const tail = agent.lastLines(3).join(' | ');
      const exit = agent.exitStatus();
      await agent.stop(2000);
      agent.killGroup();
      const why =
        phases === 'exited'
          ? `the agent exited (${exit?.signal ?? `code ${exit?.code}`}) before publishing agents/${o.agentId}/state.json`
          : `the agent did not publish agents/${o.agentId}/state.json within ${Math.round(limit / 1000)} s`;
      throw new CannotRun(
        `${why}; it is given the workspace in TAP_WORKSPACE (or {workspace}) and its agent id in TAP_AGENT_ID (or {agent_id})${tail ? `; its output ends: ${tail}` : ''}`,
      );
    }
    // Give the seeded task a moment to be claimed, so the start-up observation is made.
    await poll(() => publishedBeforeClaim, 3000 * s.timeScale);
    look(observer.claims(seededTask)[0] ?? null);
    claimWatch.close();
    const startup: Startup = { seededTask, publishedBeforeClaim, phases, startupMs };
    return new WorkspaceRun(s, ws, agent, startup, observer);
  }

  get root(): string {
    return this.ws.root;
  }

  get agentId(): string {
    return this.settings.options.agentId;
  }

  get leaseMs(): number {
    return this.ws.config.lease_ms;
  }

  /** `ms` scaled by --time-scale. */
  scaled(ms: number): number {
    return ms * this.settings.timeScale;
  }

  /** True when the agent serves `phase` (its state.json at start-up said so). */
  serves(phase: string): boolean {
    return this.startup.phases.includes(phase);
  }

  /** A fresh task id: `<tag>-<n>`. */
  taskId(tag: string): string {
    return `${tag}-${++this.ids}`;
  }

  /** Opens a mailbox connection for a case (the target hook). */
  async open(_o: OpenOptions = {}): Promise<Connection> {
    if (!this.agent.alive()) throw new Error('the agent process is not running');
    return { transport: this.mail.connect() };
  }

  /** Stops the agent (SIGTERM, then SIGKILL after the grace period) and the observers. */
  async close(graceMs: number): Promise<void> {
    this.observer.close();
    await this.mail.closeAll('the run is over');
    await this.agent.stop(graceMs);
    this.agent.killGroup();
  }
}
