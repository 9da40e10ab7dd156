/**
 * runWorkspaceAgent: an agent that works through a workspace. It publishes its card and state,
 * watches `pending/` and `awaiting/` (fs events, with a periodic rescan as fallback), claims the
 * records whose phase it serves — in `awaiting/` only those with a decision on their current plan —
 * runs them with a renewed lease, writes heartbeats, reaps expired claims, turns records no agent
 * can run into failed ones, and on shutdown releases what it holds (spec: bindings-workspace).
 */
import { watch, type FSWatcher } from 'node:fs';
import type { AgentCard } from '../../schemas/src/index.ts';
import type { Workspace } from './workspace.ts';
import { openWorkspace } from './workspace.ts';
import { publishAgent, writeAgentState, writeHeartbeat, type AgentState } from './agents.ts';
import { approvalOf, type Approval } from './approval.ts';
import { checkRecordArtifacts } from './artifacts.ts';
import { claimAwaiting, claimPending, type Claim } from './claim.ts';
import { WorkspaceError } from './errors.ts';
import { listNames } from './fsio.ts';
import { isIdentifier, parseRecordName } from './layout.ts';
import { runPhase, type PhaseHandler, type PhaseResult } from './phase.ts';
import { Reaper } from './reaper.ts';
import { cloneRecord, isoNow, type TaskRecord } from './record.ts';
import { commitTransition, prepare } from './transition.ts';
import { RecordInspector, awaitingProblem, pendingProblem } from './inspect.ts';
import { planRejected, rejectClaim, type RefusalContext } from './refusal.ts';
import type { RunnerEvent, WorkspaceAgent, WorkspaceAgentOptions } from './runner-options.ts';
import { Listings } from './listings.ts';
import { StateWriter } from './state-writer.ts';

/** The longest `state.json` lags behind the tasks an agent holds (a third of the lease when that is shorter). */
const STATE_EVERY_MS = 500;

export type { RunnerEvent, WorkspaceAgent, WorkspaceAgentOptions } from './runner-options.ts';

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
  private readonly inspector: RecordInspector;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly reaper: Reaper | null;
  private readonly watchers: FSWatcher[] = [];
  private scanQueued = false;
  private scanning = false;
  private rescan = false;
  private reaping = false;
  private beats = 0;
  private readonly stateFile: StateWriter;
  private readonly listings: Listings;
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
    this.listings = new Listings((dir) => listNames(ws.paths.dir(dir)), this.pollMs);
    this.stateFile = new StateWriter(() => this.writeState(), Math.min(STATE_EVERY_MS, Math.floor(ws.config.lease_ms / 3)));
    this.reaper = options.reap === false ? null : new Reaper(ws, { actor: options.agentId, now: options.now });
    this.inspector = new RecordInspector(ws, {
      log: (level, message) => this.log(level, message),
      emit: (event) => this.emit(event),
      serves: (record) => this.serves(record),
    });
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
        const w = watch(this.ws.paths.dir(dir), { persistent: true }, () => {
          this.listings.changed(dir);
          this.scheduleScan();
        });
        this.listings.watching(dir, true);
        w.on('error', () => {
          this.listings.watching(dir, false);
          w.close();
        });
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
    let listedBoth = true;
    for (const dir of ['pending', 'awaiting'] as const) {
      const listing = await this.listings.namesToTry(dir);
      if (listing.fresh) for (const n of listing.names) present.add(`${dir}/${n}`);
      else listedBoth = false;
      listing.fresh = false;
      while (listing.next < listing.names.length) {
        if (this.stopping || this.active.size >= this.concurrency) break;
        const name = listing.names[listing.next++]!;
        const taskId = parseRecordName(name)!;
        if ([...this.active.keys()].some((k) => k.startsWith(`${taskId}@`))) continue;
        const seen = await this.inspector.look(dir, name, taskId);
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
    // The cache keeps what a listing of both directories still shows.
    if (listedBoth) this.inspector.forgetAllBut(present);
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
    if (!claim.check.ok) return rejectClaim(this.refusals, claim, claim.check, null);
    const record = claim.check.record;
    const problem =
      (claim.from === 'pending' ? pendingProblem(record) : awaitingProblem(record)) ?? (await checkRecordArtifacts(this.ws, record));
    if (problem) return rejectClaim(this.refusals, claim, problem, record);
    // The file changed since it was read: hand it back.
    if (!this.serves(record)) return this.release(claim, record, 'not a phase this agent serves');
    let approval: Approval | null = null;
    if (claim.from === 'awaiting') {
      approval = await approvalOf(this.ws, claim.taskId);
      if (approval.state !== 'decided') return this.release(claim, record, `no decision on the current plan any more (${approval.state})`);
      if (approval.decision!.decision === 'rejected') return planRejected(this.refusals, claim, record, approval);
    }
    const phase = record.next_phase!;
    const handler = this.handlers.get(phase)!;
    this.emit({ type: 'claimed', task_id: claim.taskId, epoch: claim.epoch, phase });
    this.stateFile.touch();
    const run = (async () => {
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
      this.stateFile.touch();
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

  private get refusals(): RefusalContext {
    return { ws: this.ws, agentId: this.agentId, log: (level, message) => this.log(level, message), emit: (event) => this.emit(event) };
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
      await this.stateFile.close();
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
