/**
 * What a scan of a workspace agent learns about one file in `pending/` or `awaiting/`: its record,
 * what makes it unrunnable, and the approval of an awaiting one; cached while the file (and its
 * plan and decision files) are unchanged. A file that cannot be read is set aside in
 * tasks/unreadable/ (spec: bindings-workspace#directories, bindings-workspace#peer-files).
 */
import { join } from 'node:path';
import { approvalOf, type Approval } from './approval.ts';
import { checkRecordArtifacts } from './artifacts.ts';
import { isUnreadable, lstatOrNull, readPeerFile } from './fsio.ts';
import { MAX_RECORD_BYTES, checkRecordBytes, type RecordProblem, type TaskRecord } from './record.ts';
import type { RunnerEvent } from './runner-options.ts';
import { setAside } from './unreadable.ts';
import type { Workspace } from './workspace.ts';

/** What a scan learnt about one pending or awaiting file, cached while it (and its plan and decision files) are unchanged. */
export type Inspection = {
  key: string;
  epoch: number;
  problem: RecordProblem | null;
  record: TaskRecord | null;
  approval: Approval | null;
};

/** What the inspector reports through, and asks of, the agent it works for. */
export interface InspectorHooks {
  log(level: 'debug' | 'info' | 'warn' | 'error', message: string): void;
  emit(event: RunnerEvent): void;
  /** True when the agent serves the record's next phase (spec: bindings-workspace#phase-routing). */
  serves(record: TaskRecord): boolean;
}

/** Reads and remembers the pending and awaiting files of one workspace agent. */
export class RecordInspector {
  private readonly cache = new Map<string, Inspection>();

  constructor(
    private readonly ws: Workspace,
    private readonly hooks: InspectorHooks,
  ) {}

  /** Forgets every file but those of `present` (`<dir>/<name>`), which the last scan saw. */
  forgetAllBut(present: Set<string>): void {
    for (const k of this.cache.keys()) if (!present.has(k)) this.cache.delete(k);
  }

  /** A signature of a file that changes when it is replaced or rewritten; '-' when it is missing. */
  private async signature(path: string): Promise<string | null> {
    const st = lstatOrNull(path);
    return st ? (st.isFile() ? `${st.ino}:${st.size}:${st.mtimeMs}` : null) : '-';
  }

  /** Moves a record that cannot be read into tasks/unreadable/ with its reason (spec: bindings-workspace#peer-files). */
  private async deadLetter(dir: 'pending' | 'awaiting', name: string, reason: string): Promise<void> {
    const path = join(this.ws.paths.dir(dir), name);
    const moved = await setAside(path, this.ws.paths.unreadable, `tasks/${dir}/${name}`, reason);
    if (!moved) return;
    this.hooks.log('warn', `tasks/${dir}/${name} cannot be read (${reason}); moved to ${moved}`);
    this.hooks.emit({ type: 'unreadable', path, moved_to: moved, reason });
  }

  /** Reads (or recalls) what a pending or awaiting file holds, with the approval of an awaiting one; null when it vanished. */
  async look(dir: 'pending' | 'awaiting', name: string, taskId: string): Promise<Inspection | null> {
    const path = this.ws.paths.record(dir, taskId);
    const own = await this.signature(path);
    if (own === '-') return null;
    if (own === null) {
      const st = lstatOrNull(path);
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
    let seen: Inspection;
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
      if (a.problem && a.state !== 'no-plan' && (seen.record === null || this.hooks.serves(seen.record))) {
        this.hooks.log(a.state === 'stale' ? 'info' : 'warn', `${taskId} stays in awaiting/: ${a.problem}`);
        this.hooks.emit({ type: 'decision_refused', task_id: taskId, state: a.state, message: a.problem });
      }
    }
    this.cache.set(cacheKey, seen);
    return seen;
  }
}

/** What makes a schema-valid record in `awaiting/` unrunnable once decided (spec: bindings-workspace#directories). */
export function awaitingProblem(record: TaskRecord): RecordProblem | null {
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
export function pendingProblem(record: TaskRecord): RecordProblem | null {
  if (record.state.status !== undefined && record.state.status !== 'pending') {
    return { code: 'INVALID_MESSAGE', message: `a record in pending/ has state.status ${JSON.stringify(record.state.status)}` };
  }
  if (record.next_phase === null) return { code: 'INVALID_MESSAGE', message: 'a record in pending/ has no next_phase' };
  return null;
}
