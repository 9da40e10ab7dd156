/**
 * The reaper: returns claims whose lease expired — judged only by its own observations, never by a
 * time another host wrote — to `pending/` with `attempts + 1`, or to `failed/` with MAX_ATTEMPTS;
 * finishes transitions whose actor stopped half-way; removes leftovers (spec: bindings-workspace#reaper).
 */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import type { Workspace } from './workspace.ts';
import { leaseSignature, readLease } from './agents.ts';
import { isMissing, isTmp, listNames, readBounded, readJsonFile, sha256Hex, unlinkIfExists } from './fsio.ts';
import { TASK_DIRS, parseProcessingName, type ProcessingEntry } from './layout.ts';
import { MAX_RECORD_BYTES, checkRecordBytes, cloneRecord, isoNow, rejectedRecord, type TaskRecord } from './record.ts';
import { commitTransition, dirOfBytes, finishLockedCommit, prepare, settleMarker, type ClaimRef } from './transition.ts';

/** One thing a reaper pass did. */
export interface ReapAction {
  task_id: string;
  epoch: number;
  action: 'requeued' | 'dead-lettered' | 'rejected' | 'returned' | 'recovered' | 'removed';
  /** The agent whose lease expired, when its lease said. */
  holder?: string | null;
  attempts?: number;
  /** For 'removed': the file name. */
  file?: string;
}

/** Options of a Reaper. */
export interface ReaperOptions {
  /** The agent id the reaper acts as (written into locks and `processed_by` of rejected records). */
  actor: string;
  /** A monotonic clock in ms (default performance.now); only differences of its readings are used. */
  now?: () => number;
}

interface Observation {
  signature: string;
  since: number;
}

/**
 * The record a failed attempt leaves: back to `pending/` with `attempts + 1`, or to `failed/`
 * with MAX_ATTEMPTS once attempts reach `max_attempts` (spec: bindings-workspace#reaper, #dead-letters).
 */
export function afterFailedAttempt(
  ws: Workspace,
  claimed: TaskRecord,
  epoch: number,
  why: string,
  lastError: TaskRecord['state']['last_error'],
  checkpoint: Record<string, unknown> | null | undefined,
  holder: string | null | undefined,
): TaskRecord {
  const rec = cloneRecord(claimed);
  const attempts = rec.state.attempts + 1;
  rec.state.attempts = attempts;
  rec.state.epoch = epoch;
  if (checkpoint !== undefined) rec.state.checkpoint = checkpoint;
  if (holder) rec.state.processed_by = holder;
  if (lastError) rec.state.last_error = lastError;
  if (attempts >= ws.config.max_attempts) {
    const last = rec.state.last_error ? ` The last error: ${rec.state.last_error.code}: ${rec.state.last_error.message}` : '';
    rec.state.status = 'failed';
    rec.state.last_error = {
      code: 'MAX_ATTEMPTS',
      message:
        `phase ${JSON.stringify(rec.next_phase)} was claimed ${attempts} times (max_attempts ${ws.config.max_attempts}) without finishing; ${why}.${last}`.slice(
          0,
          8192,
        ),
      at: isoNow(),
    };
  } else {
    rec.state.status = 'pending';
  }
  return rec;
}

/** Watches `processing/` across passes; one instance per process, its observations are its own. */
export class Reaper {
  private readonly now: () => number;
  private readonly observed = new Map<string, Observation>();

  constructor(
    private readonly ws: Workspace,
    private readonly options: ReaperOptions,
  ) {
    this.now = options.now ?? (() => performance.now());
  }

  /**
   * Looks at `processing/` once: reaps claims whose lease it has seen unchanged for `lease_ms`,
   * settles commit markers it has seen before, and removes leftovers it has seen for `lease_ms`.
   */
  async pass(): Promise<ReapAction[]> {
    const { ws } = this;
    const leaseMs = ws.config.lease_ms;
    const now = this.now();
    const seen = new Set<string>();
    const actions: ReapAction[] = [];
    const processing = ws.paths.dir('processing');
    const names = await listNames(processing);
    const entries = names.map(parseProcessingName).filter((e): e is ProcessingEntry => e !== null);
    const live = new Set(entries.filter((e) => e.kind === 'claim').map((e) => `${e.taskId}@${e.epoch}`));
    const markers = new Set(entries.filter((e) => e.kind === 'commit').map((e) => `${e.taskId}@${e.epoch}`));
    // Observe and judge each key; `expired` is true once the signature stayed the same for `span` ms.
    const judge = (key: string, signature: string, span: number): boolean => {
      seen.add(key);
      const o = this.observed.get(key);
      if (!o || o.signature !== signature) {
        this.observed.set(key, { signature, since: now });
        return false;
      }
      return now - o.since >= span;
    };

    for (const e of entries) {
      const group = `${e.taskId}@${e.epoch}`;
      if (e.kind === 'claim') {
        const ino = await fsp.lstat(join(processing, e.name)).then(
          (s) => String(s.ino),
          () => null,
        );
        if (ino === null) continue;
        const signature = `${ino}|${await leaseSignature(ws, e.taskId, e.epoch)}`;
        if (!judge(`claim:${e.name}`, signature, leaseMs)) continue;
        this.observed.delete(`claim:${e.name}`);
        const action = await this.reap(e.taskId, e.epoch);
        if (action) actions.push(action);
      } else if (e.kind === 'commit') {
        // A marker normally lives for milliseconds; one seen for a while belongs to an actor that stopped.
        if (!judge(`marker:${e.name}`, 'marker', Math.max(1, leaseMs / 3))) continue;
        this.observed.delete(`marker:${e.name}`);
        const settled = await settleMarker(ws, e.taskId, e.epoch, e.nonce);
        if (settled.result !== 'gone')
          actions.push({ task_id: e.taskId, epoch: e.epoch, action: settled.result === 'published' ? 'recovered' : 'returned' });
      } else if (!live.has(group) && !markers.has(group)) {
        // A sidecar or prepared record whose claim is over: remove it once it has been seen for lease_ms.
        if (!judge(`orphan:${e.name}`, 'orphan', leaseMs)) continue;
        this.observed.delete(`orphan:${e.name}`);
        if (await this.stillOrphan(e)) {
          await unlinkIfExists(join(processing, e.name));
          actions.push({ task_id: e.taskId, epoch: e.epoch, action: 'removed', file: e.name });
        }
      }
    }
    // Temporary files of writers that stopped, in every task directory.
    for (const dir of [...TASK_DIRS, 'history'] as const) {
      const path = dir === 'history' ? ws.paths.history : ws.paths.dir(dir);
      for (const name of dir === 'processing' ? names : await listNames(path)) {
        if (!isTmp(name)) continue;
        const size = await fsp.lstat(join(path, name)).then(
          (s) => `${s.ino}:${s.size}`,
          () => null,
        );
        if (size === null) continue;
        if (!judge(`tmp:${dir}/${name}`, size, 2 * leaseMs)) continue;
        this.observed.delete(`tmp:${dir}/${name}`);
        await unlinkIfExists(join(path, name));
      }
    }
    for (const key of [...this.observed.keys()]) if (!seen.has(key)) this.observed.delete(key);
    return actions;
  }

  /** True when neither the claim nor a commit marker of the leftover's epoch exists (checked in that order). */
  private async stillOrphan(e: ProcessingEntry): Promise<boolean> {
    const names = new Set(await listNames(this.ws.paths.dir('processing')));
    if (names.has(`${e.taskId}@${e.epoch}.tap.json`)) return false;
    for (const n of names) if (n.startsWith(`${e.taskId}@${e.epoch}.`) && n.endsWith('.commit')) return false;
    return true;
  }

  /** Ends one expired claim with a transition; null when another actor ended it first. */
  private async reap(taskId: string, epoch: number): Promise<ReapAction | null> {
    const { ws } = this;
    const path = ws.paths.claim(taskId, epoch);
    const read = await readBounded(path, MAX_RECORD_BYTES);
    if (!read) return null;
    const claim: ClaimRef = { taskId, epoch, digest: sha256Hex(read.bytes) };
    const check = checkRecordBytes(read.bytes, taskId, read.oversized);
    const lease = await readLease(ws, taskId, epoch);
    const holder = lease?.agent_id ?? null;
    let next: TaskRecord | Uint8Array;
    let action: ReapAction['action'];
    let attempts: number | undefined;
    if (!check.ok) {
      next = rejectedRecord(taskId, epoch, read.bytes, check, this.options.actor);
      action = 'rejected';
    } else if (check.record.state.epoch !== epoch - 1) {
      // Not the record this claim was made on (see claimPending): back unchanged, to pending/ or awaiting/ by its status.
      next = read.bytes;
      action = 'returned';
    } else {
      const cp = await readJsonFile(ws.paths.sidecar(taskId, epoch, 'checkpoint'));
      const checkpoint = cp && typeof cp === 'object' && !Array.isArray(cp) ? (cp as Record<string, unknown>) : undefined;
      const why = `the lease of claim ${epoch}${holder ? ` by ${holder}` : ''} expired`;
      next = afterFailedAttempt(ws, check.record, epoch, why, null, checkpoint, holder);
      attempts = next.state.attempts;
      action = next.state.status === 'failed' ? 'dead-lettered' : 'requeued';
    }
    const prepared = next instanceof Uint8Array ? { dir: dirOfBytes(next), bytes: next } : prepare(next);
    const outcome = await commitTransition(ws, claim, prepared, this.options.actor);
    if (!outcome.ok && ws.config.claim_mode === 'lock') {
      // The commit lock may belong to an actor that stopped between the lock and its rename.
      const stillThere = await fsp.lstat(path).then(
        () => true,
        (err) => (isMissing(err) ? false : Promise.reject(err)),
      );
      if (stillThere && (await finishLockedCommit(ws, taskId, epoch))) return { task_id: taskId, epoch, action: 'recovered', holder };
    }
    if (!outcome.ok) return null;
    return { task_id: taskId, epoch, action, holder, ...(attempts !== undefined ? { attempts } : {}) };
  }
}
