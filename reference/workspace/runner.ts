/**
 * runWorkspaceAgent: an agent that works through a workspace. It publishes its card and state,
 * watches `pending/` and `awaiting/` (fs events, with a periodic rescan as fallback), claims the
 * records whose phase it serves — in `awaiting/` only those with a decision on their current plan —
 * runs them with a renewed lease, writes heartbeats, reaps expired claims, turns records no agent
 * can run into failed ones, and on shutdown releases what it holds (spec: bindings-workspace).
 */
import { promises as fsp, watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import type { AgentCard } from '../../schemas/src/index.ts';
import type { Workspace } from './workspace.ts';
import { openWorkspace } from './workspace.ts';
import { publishAgent, writeAgentState, writeHeartbeat, type AgentState } from './agents.ts';
import { approvalOf, forgetPlan, readPlan, type Approval } from './approval.ts';
import { checkRecordArtifacts } from './artifacts.ts';
import { claimAwaiting, claimPending, type Claim } from './claim.ts';
import { WorkspaceError } from './errors.ts';
import { isUnreadable, listNames, readPeerFile } from './fsio.ts';
import { isIdentifier, parseRecordName } from './layout.ts';
import { runPhase, type PhaseHandler, type PhaseResult } from './phase.ts';
import { Reaper, type ReapAction } from './reaper.ts';
import { MAX_RECORD_BYTES, checkRecordBytes, cloneRecord, isoNow, rejectedRecord, type RecordProblem, type TaskRecord } from './record.ts';
import { commitTransition, prepare } from './transition.ts';
import { setAside } from './unreadable.ts';

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

/** What a scan learnt about one pending or awaiting file, cached while it (and its plan and decision files) are unchanged. */
type Seen = { key: string; epoch: number; problem: RecordProblem | null; record: TaskRecord | null; approval: Approval | null };

/** Starts a workspace agent; resolves once its card and state are published and it is watching. */
export async function runWorkspaceAgent(options: WorkspaceAgentOptions): Promise<WorkspaceAgent> {
  const ws = typeof options.workspace === 'string' ? await openWorkspace(options.workspace) : options.workspace;
  if (!isIdentifier(options.agentId)) {
    throw new WorkspaceError(
      'BAD_ID',
      `agent id ${JSON.stringify(options.agentId)} is not a valid identifier (lowercase letters, digits, "_", "-", dot-separated)`,
    );
  }
  const handlers = new Map<string, PhaseHandler>();
  if (Array.isArray(options.phases)) {
    if (!options.handler) throw new WorkspaceError('CONFLICT', 'phases given as a list need a handler');
    for (const p of options.phases) handlers.set(p, options.handler);
  } else {
    for (const [p, h] of Object.entries(options.phases)) handlers.set(p, h);
  }
  for (const p of handlers.keys()) {
    if (!isIdentifier(p)) throw new WorkspaceError('BAD_ID', `phase ${JSON.stringify(p)} is not a valid phase name`);
  }
  const runner = new Runner(ws, options, handlers);
  await runner.start();
  return runner.handle();
}

class Runner {
  private readonly agentId: string;
  private readonly pollMs: number;
  private readonly concurrency: number;
  private readonly graceMs: number;
  private readonly shutdown = new AbortController();
  private readonly active = new Map<string, Promise<void>>();
  private readonly cache = new Map<string, Seen>();
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly reaper: Reaper | null;
  private readonly watchers: FSWatcher[] = [];
  private scanQueued = false;
  private scanning = false;
  private rescan = false;
  private reaping = false;
  private beats = 0;
  private stopping: Promise<void> | null = null;
  private markStopped!: () => void;
  readonly stopped = new Promise<void>((resolve) => (this.markStopped = resolve));
  private readonly signalHandler = () => void this.stop('signal');

  constructor(
    private readonly ws: Workspace,
    private readonly options: WorkspaceAgentOptions,
    private readonly handlers: Map<string, PhaseHandler>,
  ) {
    this.agentId = options.agentId;
    this.pollMs = options.pollMs ?? 1000;
    this.concurrency = Math.max(1, options.concurrency ?? 1);
    this.graceMs = options.graceMs ?? 5000;
    this.reaper = options.reap === false ? null : new Reaper(ws, { actor: options.agentId, now: options.now });
  }

  private log(level: 'debug' | 'info' | 'warn' | 'error', message: string): void {
    this.options.logger?.(level, `${this.agentId}: ${message}`);
  }

  private emit(event: RunnerEvent): void {
    try {
      this.options.onEvent?.(event);
    } catch (err) {
      this.log('warn', `onEvent threw: ${(err as Error).message}`);
    }
  }

  handle(): WorkspaceAgent {
    return {
      agentId: this.agentId,
      workspace: this.ws,
      stop: (reason) => this.stop(reason),
      stopped: this.stopped,
      holding: () => [...this.active.keys()],
      poke: () => this.scheduleScan(),
    };
  }

  private card(): AgentCard {
    const given = this.options.card ?? {};
    const phases = [...this.handlers.keys()];
    return {
      name: given.name ?? this.agentId,
      description: given.description ?? `A workspace agent serving the phases ${phases.join(', ')}.`,
      capabilities: given.capabilities ?? [],
      limits: given.limits ?? { max_concurrent_tasks: this.concurrency, max_task_seconds: 3600, max_message_bytes: 1048576 },
      ...given,
      agent_id: this.agentId,
    };
  }

  private state(status: AgentState['status']): AgentState {
    return { agent_id: this.agentId, phases: [...this.handlers.keys()], status, updated_at: isoNow(), holding: [...this.active.keys()] };
  }

  async start(): Promise<void> {
    // spec: bindings-workspace#agents — card and state before any claim.
    await publishAgent(this.ws, this.card(), this.state('idle'));
    await this.beat();
    const third = Math.max(10, Math.floor(this.ws.config.lease_ms / 3));
    this.timers.push(setInterval(() => void this.beat(), third));
    this.timers.push(setInterval(() => this.scheduleScan(), this.pollMs));
    if (this.reaper)
      this.timers.push(setInterval(() => void this.reap(), Math.max(10, Math.min(this.pollMs, Math.floor(this.ws.config.lease_ms / 4)))));
    for (const dir of ['pending', 'awaiting'] as const) {
      try {
        const w = watch(this.ws.paths.dir(dir), { persistent: true }, () => this.scheduleScan());
        w.on('error', () => w.close());
        this.watchers.push(w);
      } catch {
        // the periodic rescan still finds everything
      }
    }
    if (this.options.signal) {
      if (this.options.signal.aborted) void this.stop('aborted');
      else this.options.signal.addEventListener('abort', () => void this.stop('aborted'), { once: true });
    }
    if (this.options.handleSignals) {
      process.on('SIGTERM', this.signalHandler);
      process.on('SIGINT', this.signalHandler);
    }
    this.scheduleScan();
  }

  private async beat(): Promise<void> {
    try {
      this.beats += 1;
      await writeHeartbeat(this.ws, this.agentId, this.beats);
    } catch (err) {
      this.log('warn', `could not write the heartbeat: ${(err as Error).message}`);
    }
  }

  private async reap(): Promise<void> {
    if (!this.reaper || this.reaping || this.stopping) return;
    this.reaping = true;
    try {
      for (const action of await this.reaper.pass()) {
        this.emit({ type: 'reaped', action });
        if (action.action === 'requeued' || action.action === 'returned') this.scheduleScan();
      }
    } catch (err) {
      this.log('warn', `reaper pass failed: ${(err as Error).message}`);
    } finally {
      this.reaping = false;
    }
  }

  private scheduleScan(): void {
    if (this.stopping || this.scanQueued) return;
    this.scanQueued = true;
    setImmediate(() => {
      this.scanQueued = false;
      void this.scan();
    });
  }

  private async scan(): Promise<void> {
    if (this.scanning) {
      this.rescan = true;
      return;
    }
    this.scanning = true;
    try {
      do {
        this.rescan = false;
        await this.scanOnce();
      } while (this.rescan && !this.stopping);
    } catch (err) {
      this.log('warn', `scan of pending/ failed: ${(err as Error).message}`);
      this.emit({ type: 'error', message: (err as Error).message });
    } finally {
      this.scanning = false;
    }
  }

  private async scanOnce(): Promise<void> {
    if (this.stopping || this.active.size >= this.concurrency) return;
    const present = new Set<string>();
    for (const dir of ['pending', 'awaiting'] as const) {
      const names = (await listNames(this.ws.paths.dir(dir))).filter((n) => parseRecordName(n) !== null).sort();
      for (const n of names) present.add(`${dir}/${n}`);
      // Start at a random place so that agents racing for the same files spread out.
      const start = names.length > 0 ? Math.floor(Math.random() * names.length) : 0;
      for (let i = 0; i < names.length; i++) {
        if (this.stopping || this.active.size >= this.concurrency) break;
        const name = names[(start + i) % names.length]!;
        const taskId = parseRecordName(name)!;
        if ([...this.active.keys()].some((k) => k.startsWith(`${taskId}@`))) continue;
        const seen = await this.look(dir, name, taskId);
        if (!seen) continue;
        if (!seen.problem && !this.serves(seen.record!)) continue;
        // spec: bindings-workspace#approval-and-cancel — a record in awaiting/ only with a decision on its current plan.
        if (dir === 'awaiting' && seen.approval?.state !== 'decided') continue;
        const claim =
          dir === 'pending'
            ? await claimPending(this.ws, taskId, seen.epoch, this.agentId)
            : await claimAwaiting(this.ws, taskId, seen.epoch, this.agentId);
        if (!claim) continue;
        await this.claimed(claim);
      }
    }
    for (const k of this.cache.keys()) if (!present.has(k)) this.cache.delete(k);
  }

  /** A signature of a file that changes when it is replaced or rewritten; '-' when it is missing. */
  private async signature(path: string): Promise<string | null> {
    const st = await fsp.lstat(path).catch(() => null);
    return st ? (st.isFile() ? `${st.ino}:${st.size}:${st.mtimeMs}` : null) : '-';
  }

  /** Moves a record that cannot be read into tasks/unreadable/ with its reason (spec: bindings-workspace#peer-files). */
  private async deadLetter(dir: 'pending' | 'awaiting', name: string, reason: string): Promise<void> {
    const path = join(this.ws.paths.dir(dir), name);
    const moved = await setAside(path, this.ws.paths.unreadable, `tasks/${dir}/${name}`, reason);
    if (!moved) return;
    this.log('warn', `tasks/${dir}/${name} cannot be read (${reason}); moved to ${moved}`);
    this.emit({ type: 'unreadable', path, moved_to: moved, reason });
  }

  /** Reads (or recalls) what a pending or awaiting file holds, with the approval of an awaiting one; null when it vanished. */
  private async look(dir: 'pending' | 'awaiting', name: string, taskId: string): Promise<Seen | null> {
    const path = this.ws.paths.record(dir, taskId);
    const own = await this.signature(path);
    if (own === '-') return null;
    if (own === null) {
      const st = await fsp.lstat(path).catch(() => null);
      await this.deadLetter(dir, name, st?.isSymbolicLink() ? 'a symbolic link, not a regular file' : 'not a regular file');
      return null;
    }
    const key =
      dir === 'pending'
        ? own
        : `${own}|${await this.signature(this.ws.paths.plan(taskId))}|${await this.signature(this.ws.paths.decision(taskId))}`;
    const cacheKey = `${dir}/${name}`;
    const cached = this.cache.get(cacheKey);
    if (cached && cached.key === key) return cached;
    const read = await readPeerFile(path, MAX_RECORD_BYTES);
    if (!read) return null;
    if (isUnreadable(read)) {
      await this.deadLetter(dir, name, read.unreadable);
      return null;
    }
    const check = checkRecordBytes(read.bytes, taskId, read.oversized);
    let seen: Seen;
    if (!check.ok) {
      seen = { key, epoch: check.epoch ?? 0, problem: check, record: null, approval: null };
    } else {
      const problem =
        (dir === 'pending' ? pendingProblem(check.record) : awaitingProblem(check.record)) ??
        (await checkRecordArtifacts(this.ws, check.record));
      seen = { key, epoch: check.record.state.epoch, problem, record: check.record, approval: null };
    }
    if (dir === 'awaiting') {
      seen.approval = await approvalOf(this.ws, taskId);
      // A decision that cannot be acted on is reported once per change of the files, by the agents serving the phase.
      const a = seen.approval;
      if (a.problem && a.state !== 'no-plan' && (seen.record === null || this.serves(seen.record))) {
        this.log(a.state === 'stale' ? 'info' : 'warn', `${taskId} stays in awaiting/: ${a.problem}`);
        this.emit({ type: 'decision_refused', task_id: taskId, state: a.state, message: a.problem });
      }
    }
    this.cache.set(cacheKey, seen);
    return seen;
  }

  /** spec: bindings-workspace#phase-routing */
  private serves(record: TaskRecord): boolean {
    const phase = record.next_phase;
    const target = record.requirements.target_agent;
    return phase !== null && this.handlers.has(phase) && (target === '' || target === this.agentId);
  }

  /** Hands a claimed record back where it came from, as the next epoch, untouched otherwise. */
  private async release(claim: Claim, record: TaskRecord, reason: string): Promise<void> {
    const rec = cloneRecord(record);
    rec.state.epoch = claim.epoch;
    const out = await commitTransition(this.ws, claim, prepare(rec), this.agentId);
    if (out.ok) this.emit({ type: 'released', task_id: claim.taskId, epoch: claim.epoch, reason });
  }

  /** Handles a fresh claim: rejects what cannot run, releases what is not ours, ends a rejected plan, else starts the phase. */
  private async claimed(claim: Claim): Promise<void> {
    const key = `${claim.taskId}@${claim.epoch}`;
    if (!claim.check.ok) return this.reject(claim, claim.check, null);
    const record = claim.check.record;
    const problem =
      (claim.from === 'pending' ? pendingProblem(record) : awaitingProblem(record)) ?? (await checkRecordArtifacts(this.ws, record));
    if (problem) return this.reject(claim, problem, record);
    // The file changed since it was read: hand it back.
    if (!this.serves(record)) return this.release(claim, record, 'not a phase this agent serves');
    let approval: Approval | null = null;
    if (claim.from === 'awaiting') {
      approval = await approvalOf(this.ws, claim.taskId);
      if (approval.state !== 'decided') return this.release(claim, record, `no decision on the current plan any more (${approval.state})`);
      if (approval.decision!.decision === 'rejected') return this.planRejected(claim, record, approval);
    }
    const phase = record.next_phase!;
    const handler = this.handlers.get(phase)!;
    this.emit({ type: 'claimed', task_id: claim.taskId, epoch: claim.epoch, phase });
    const run = (async () => {
      await this.writeState();
      let result: PhaseResult | null = null;
      try {
        result = await runPhase({
          ws: this.ws,
          agentId: this.agentId,
          claim,
          record,
          handler,
          approval: approval ? { plan: approval.plan!, decision: approval.decision! } : null,
          shutdown: this.shutdown.signal,
          graceMs: this.graceMs,
          log: (level, message) => this.log(level, message),
        });
      } catch (err) {
        this.log('error', `phase ${phase} of ${key} failed in the runner: ${(err as Error).message}`);
        this.emit({ type: 'error', message: (err as Error).message });
      }
      if (result) this.report(result);
    })().finally(() => {
      this.active.delete(key);
      void this.writeState();
      this.scheduleScan();
    });
    this.active.set(key, run);
  }

  private report(r: PhaseResult): void {
    if (!r.transition?.ok) {
      this.emit({ type: 'lost', task_id: r.taskId, epoch: r.epoch, phase: r.phase });
      return;
    }
    if (r.status === 'pending' && r.error?.code === 'SHUTTING_DOWN') {
      this.emit({ type: 'released', task_id: r.taskId, epoch: r.epoch, reason: 'shutdown' });
      return;
    }
    if (r.planId !== undefined) {
      this.emit({ type: 'awaiting', task_id: r.taskId, epoch: r.epoch, phase: r.phase, plan_id: r.planId });
      return;
    }
    this.emit({
      type: 'finished',
      task_id: r.taskId,
      epoch: r.epoch,
      phase: r.phase,
      status: r.status ?? 'pending',
      dir: r.transition.dir,
      ...(r.error ? { error: r.error } : {}),
    });
  }

  /**
   * Ends a task whose plan was rejected: `failed/` with PLAN_REJECTED, the handler never called,
   * and the plan and decision files removed (spec: plans#decisions, bindings-workspace#approval-and-cancel).
   */
  private async planRejected(claim: Claim, record: TaskRecord, approval: Approval): Promise<void> {
    const plan = approval.plan!;
    const feedback = approval.decision!.feedback;
    const message = `plan "${plan.plan_id}" of phase ${JSON.stringify(record.next_phase)} was rejected${feedback ? `: ${feedback}` : ''}`;
    const next = cloneRecord(record);
    next.state = {
      ...next.state,
      epoch: claim.epoch,
      status: 'failed',
      processed_by: this.agentId,
      last_error: { code: 'PLAN_REJECTED', message: message.slice(0, 8192), at: isoNow() },
    };
    const out = await commitTransition(this.ws, claim, prepare(next), this.agentId);
    if (!out.ok) return;
    await forgetPlan(this.ws, claim.taskId, plan.plan_id);
    this.log('info', `${claim.taskId}: ${message}`);
    this.emit({
      type: 'finished',
      task_id: claim.taskId,
      epoch: claim.epoch,
      phase: record.next_phase!,
      status: 'failed',
      dir: out.dir,
      error: { code: 'PLAN_REJECTED', message },
    });
  }

  /** Moves a record no agent can run to `failed/` with the reason (spec: bindings-workspace#task-record). */
  private async reject(claim: Claim, problem: RecordProblem, record: TaskRecord | null): Promise<void> {
    let next: TaskRecord;
    if (record) {
      next = cloneRecord(record);
      next.state = {
        ...next.state,
        epoch: claim.epoch,
        status: 'failed',
        processed_by: this.agentId,
        last_error: { code: problem.code, message: problem.message.slice(0, 8192), at: isoNow() },
      };
    } else {
      next = rejectedRecord(claim.taskId, claim.epoch, claim.bytes, problem, this.agentId);
    }
    const out = await commitTransition(this.ws, claim, prepare(next), this.agentId);
    if (out.ok && claim.from === 'awaiting') {
      const plan = await readPlan(this.ws, claim.taskId);
      if (plan.state === 'ok') await forgetPlan(this.ws, claim.taskId, plan.value.plan_id);
    }
    if (out.ok) {
      this.log('warn', `refused task file ${claim.taskId}: ${problem.code}: ${problem.message}`);
      this.emit({ type: 'rejected', task_id: claim.taskId, epoch: claim.epoch, code: problem.code, message: problem.message });
    }
  }

  private async writeState(): Promise<void> {
    if (this.stopping) return;
    try {
      await writeAgentState(this.ws, this.state(this.active.size > 0 ? 'busy' : 'idle'));
    } catch (err) {
      this.log('warn', `could not write state.json: ${(err as Error).message}`);
    }
  }

  stop(reason = 'stopped'): Promise<void> {
    this.stopping ??= (async () => {
      this.log('info', `stopping (${reason})`);
      if (this.options.handleSignals) {
        process.off('SIGTERM', this.signalHandler);
        process.off('SIGINT', this.signalHandler);
      }
      for (const w of this.watchers) w.close();
      for (const t of this.timers) clearInterval(t);
      while (this.scanning || this.reaping) await new Promise((r) => setTimeout(r, 5));
      this.shutdown.abort();
      await Promise.allSettled([...this.active.values()]);
      try {
        await writeAgentState(this.ws, this.state('stopped'));
        await writeHeartbeat(this.ws, this.agentId, ++this.beats);
      } catch (err) {
        this.log('warn', `could not record the stop: ${(err as Error).message}`);
      }
      this.markStopped();
    })();
    return this.stopping;
  }
}

/** What makes a schema-valid record in `awaiting/` unrunnable once decided (spec: bindings-workspace#directories). */
function awaitingProblem(record: TaskRecord): RecordProblem | null {
  if (record.state.status !== 'awaiting_approval') {
    return {
      code: 'INVALID_MESSAGE',
      message: `a record in awaiting/ has state.status ${JSON.stringify(record.state.status ?? 'pending')}`,
    };
  }
  if (record.next_phase === null) return { code: 'INVALID_MESSAGE', message: 'a record in awaiting/ has no next_phase' };
  return null;
}

/** What makes a schema-valid record in `pending/` unrunnable (spec: bindings-workspace#directories). */
function pendingProblem(record: TaskRecord): RecordProblem | null {
  if (record.state.status !== undefined && record.state.status !== 'pending') {
    return { code: 'INVALID_MESSAGE', message: `a record in pending/ has state.status ${JSON.stringify(record.state.status)}` };
  }
  if (record.next_phase === null) return { code: 'INVALID_MESSAGE', message: 'a record in pending/ has no next_phase' };
  return null;
}
