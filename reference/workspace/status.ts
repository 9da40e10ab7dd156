/**
 * A snapshot of a workspace for operators: records per directory, claims and their leases, dead
 * letters, agents and their heartbeats. Lease and heartbeat ages come from file times and this
 * host's clock: they are estimates for people, never what a reaper decides by
 * (spec: bindings-workspace#reaper).
 */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import type { Workspace } from './workspace.ts';
import { listAgents, readLease, type AgentInfo } from './agents.ts';
import { approvalOf, type Approval } from './approval.ts';
import { isTmp, listNames, readBounded } from './fsio.ts';
import { listRecords } from './find.ts';
import { TASK_DIRS, parseAwaitingName, parseProcessingName, parseRecordName, type TaskDir } from './layout.ts';
import { MAX_RECORD_BYTES, checkRecordBytes } from './record.ts';

/** One claim in `processing/`. */
export interface ClaimInfo {
  task_id: string;
  epoch: number;
  phase: string | null;
  holder: string | null;
  renewals: number | null;
  /** Milliseconds since the lease file (or, without one, the claimed file) last changed, by file time. */
  lease_age_ms: number | null;
  /** True when that age is past lease_ms: the reaper will return the claim once it has seen it for lease_ms. */
  past_lease: boolean;
}

/** A dead letter: a record in `failed/` with MAX_ATTEMPTS (spec: bindings-workspace#dead-letters). */
export interface FailedInfo {
  task_id: string;
  status: string;
  phase: string | null;
  code: string | null;
  message: string | null;
  at: string | null;
}

/** A record in `awaiting/` and where its plan stands (spec: bindings-workspace#approval-and-cancel). */
export interface AwaitingInfo {
  task_id: string;
  phase: string | null;
  plan_id: string | null;
  /** `waiting` for a decision, `decided` (an agent will claim it), or why nothing will happen. */
  state: Approval['state'] | 'bad-record';
  decision: string | null;
  problem: string | null;
}

/** What `workspaceStatus` reports. */
export interface WorkspaceStatus {
  workspace: string;
  config: Workspace['config'];
  counts: Record<TaskDir, number>;
  claims: ClaimInfo[];
  /** Claims past their lease (by file time). */
  stuck: ClaimInfo[];
  /** Transitions committed but not yet published (an actor stopped half-way, or is finishing right now). */
  in_transition: string[];
  dead_letters: FailedInfo[];
  /** The records waiting for a plan decision, with the decision files that cannot be acted on. */
  awaiting: AwaitingInfo[];
  /** Every other record of `failed/`. */
  failed: FailedInfo[];
  agents: AgentInfo[];
  /** Files in task directories whose names the binding does not define (readers ignore them). */
  ignored_files: string[];
}

/** Reads the whole workspace once. */
export async function workspaceStatus(ws: Workspace, now = Date.now()): Promise<WorkspaceStatus> {
  const counts = { pending: 0, processing: 0, awaiting: 0, completed: 0, failed: 0 } as Record<TaskDir, number>;
  const ignored: string[] = [];
  for (const dir of TASK_DIRS) {
    for (const name of await listNames(ws.paths.dir(dir))) {
      if (isTmp(name)) continue;
      if (dir === 'processing') {
        const e = parseProcessingName(name);
        if (!e) ignored.push(`tasks/processing/${name}`);
        else if (e.kind === 'claim') counts.processing += 1;
      } else if (parseRecordName(name)) {
        counts[dir] += 1;
      } else if (!(dir === 'awaiting' && parseAwaitingName(name))) {
        ignored.push(`tasks/${dir}/${name}`);
      }
    }
  }
  const claims: ClaimInfo[] = [];
  const inTransition: string[] = [];
  const processing = ws.paths.dir('processing');
  for (const name of (await listNames(processing)).sort()) {
    const e = parseProcessingName(name);
    if (!e) continue;
    if (e.kind === 'commit') inTransition.push(`${e.taskId}@${e.epoch}`);
    if (e.kind !== 'claim') continue;
    const lease = await readLease(ws, e.taskId, e.epoch);
    const leasePath = ws.paths.sidecar(e.taskId, e.epoch, 'lease');
    const mtime = await fsp.stat(leasePath).then(
      (s) => s.mtimeMs,
      () =>
        fsp.stat(join(processing, name)).then(
          (s) => s.mtimeMs,
          () => null,
        ),
    );
    const read = await readBounded(join(processing, name), MAX_RECORD_BYTES);
    const check = read ? checkRecordBytes(read.bytes, e.taskId, read.oversized) : null;
    const age = mtime === null ? null : Math.max(0, Math.round(now - mtime));
    claims.push({
      task_id: e.taskId,
      epoch: e.epoch,
      phase: check?.ok ? check.record.next_phase : null,
      holder: lease?.agent_id ?? null,
      renewals: lease?.renewals ?? null,
      lease_age_ms: age,
      past_lease: age !== null && age > ws.config.lease_ms,
    });
  }
  const deadLetters: FailedInfo[] = [];
  const failed: FailedInfo[] = [];
  for (const r of await listRecords(ws, 'failed')) {
    const rec = r.check.ok ? r.check.record : null;
    const info: FailedInfo = {
      task_id: r.taskId,
      status: rec?.state.status ?? 'failed',
      phase: rec?.next_phase ?? null,
      code: rec?.state.last_error?.code ?? (r.check.ok ? null : r.check.code),
      message: rec?.state.last_error?.message ?? (r.check.ok ? null : r.check.message),
      at: rec?.state.last_error?.at ?? null,
    };
    (info.code === 'MAX_ATTEMPTS' ? deadLetters : failed).push(info);
  }
  const awaiting: AwaitingInfo[] = [];
  for (const r of await listRecords(ws, 'awaiting')) {
    const a = await approvalOf(ws, r.taskId);
    awaiting.push({
      task_id: r.taskId,
      phase: r.check.ok ? r.check.record.next_phase : null,
      plan_id: a.plan?.plan_id ?? null,
      state: r.check.ok ? a.state : 'bad-record',
      decision: a.decision?.decision ?? null,
      problem: r.check.ok ? (a.problem ?? null) : r.check.message,
    });
  }
  return {
    workspace: ws.root,
    config: ws.config,
    counts,
    claims,
    stuck: claims.filter((c) => c.past_lease),
    in_transition: inTransition,
    dead_letters: deadLetters,
    awaiting,
    failed,
    agents: await listAgents(ws, now),
    ignored_files: ignored,
  };
}
