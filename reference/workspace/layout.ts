/**
 * The workspace tree and the names of its files: record names, claim names carrying the epoch,
 * sidecars of a claim, commit markers and lock names (spec: bindings-workspace#layout).
 */
import { join } from 'node:path';
import type { TaskRecord } from '../../schemas/src/index.ts';

/** The file name of the workspace configuration. */
export const CONFIG_FILE = 'tap-workspace.json';

/** The task directories, one per group of task states (spec: bindings-workspace#directories). */
export const TASK_DIRS = ['pending', 'processing', 'awaiting', 'completed', 'failed'] as const;
export type TaskDir = (typeof TASK_DIRS)[number];

/** A record's `state.status`. */
export type RecordStatus = NonNullable<TaskRecord['state']['status']>;

/** The directory a published record lives in, by its status (spec: bindings-workspace#directories). */
export const STATUS_DIR: Readonly<Record<RecordStatus, TaskDir>> = {
  pending: 'pending',
  running: 'processing',
  cancelling: 'processing',
  awaiting_approval: 'awaiting',
  completed: 'completed',
  failed: 'failed',
  timed_out: 'failed',
  cancelled: 'failed',
};

/** The suffix of every task record file. */
export const RECORD_SUFFIX = '.tap.json';

/** Ids that become file names (spec: envelope#identifiers). */
export const IDENTIFIER = /^[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*$/;

/** True for a valid task, agent or phase id: the identifier pattern, at most 128 bytes. */
export function isIdentifier(value: unknown): value is string {
  return typeof value === 'string' && value.length <= 128 && IDENTIFIER.test(value);
}

/** Every path of one workspace. */
export class WorkspacePaths {
  constructor(readonly root: string) {}
  get config(): string {
    return join(this.root, CONFIG_FILE);
  }
  get tasks(): string {
    return join(this.root, 'tasks');
  }
  dir(d: TaskDir): string {
    return join(this.root, 'tasks', d);
  }
  get history(): string {
    return join(this.root, 'tasks', 'history');
  }
  get locks(): string {
    return join(this.root, 'tasks', 'locks');
  }
  /** `tasks/unreadable/`: task records that could not be read, each with a reason (spec: bindings-workspace#peer-files). */
  get unreadable(): string {
    return join(this.root, 'tasks', 'unreadable');
  }
  get artifacts(): string {
    return join(this.root, 'artifacts');
  }
  get agents(): string {
    return join(this.root, 'agents');
  }
  agent(agentId: string): string {
    return join(this.root, 'agents', agentId);
  }
  get mailboxes(): string {
    return join(this.root, 'mailboxes');
  }
  /** `tasks/<dir>/<task_id>.tap.json`. */
  record(d: TaskDir, taskId: string): string {
    return join(this.dir(d), recordName(taskId));
  }
  /** `tasks/awaiting/<task_id>.plan.json`: the plan a record in awaiting/ waits on (spec: bindings-workspace#approval-and-cancel). */
  plan(taskId: string): string {
    return join(this.dir('awaiting'), `${taskId}${PLAN_SUFFIX}`);
  }
  /** `tasks/awaiting/<task_id>.decision.json`: the requester's decision on that plan. */
  decision(taskId: string): string {
    return join(this.dir('awaiting'), `${taskId}${DECISION_SUFFIX}`);
  }
  /** `tasks/processing/<task_id>@<epoch>.tap.json`. */
  claim(taskId: string, epoch: number): string {
    return join(this.dir('processing'), claimName(taskId, epoch));
  }
  /** `tasks/processing/<task_id>@<epoch>.<kind>.json`. */
  sidecar(taskId: string, epoch: number, kind: SidecarKind): string {
    return join(this.dir('processing'), `${taskId}@${epoch}.${kind}.json`);
  }
  /** The prepared next record of a transition. */
  next(taskId: string, epoch: number, nonce: string): string {
    return join(this.dir('processing'), `${taskId}@${epoch}.${nonce}.next.json`);
  }
  /** The commit marker of a transition. */
  marker(taskId: string, epoch: number, nonce: string): string {
    return join(this.dir('processing'), `${taskId}@${epoch}.${nonce}.commit`);
  }
  /** `tasks/locks/<task_id>@<epoch>.<step>.lock` (spec: bindings-workspace#lock-mode). */
  lock(taskId: string, epoch: number, step: 'claim' | 'commit'): string {
    return join(this.locks, `${taskId}@${epoch}.${step}.lock`);
  }
}

/** The sidecars of a claim (spec: bindings-workspace#leases, #approval-and-cancel). */
export type SidecarKind = 'lease' | 'checkpoint' | 'cancel';
export const SIDECAR_KINDS: readonly SidecarKind[] = ['lease', 'checkpoint', 'cancel'];

/** The suffixes of the plan and decision files beside a record in awaiting/ (spec: bindings-workspace#approval-and-cancel). */
export const PLAN_SUFFIX = '.plan.json';
export const DECISION_SUFFIX = '.decision.json';

/** The task id and kind of a plan or decision file name in awaiting/, or null for any other name. */
export function parseAwaitingName(name: string): { taskId: string; kind: 'plan' | 'decision' } | null {
  for (const [suffix, kind] of [
    [PLAN_SUFFIX, 'plan'],
    [DECISION_SUFFIX, 'decision'],
  ] as const) {
    if (!name.endsWith(suffix)) continue;
    const id = name.slice(0, -suffix.length);
    return isIdentifier(id) ? { taskId: id, kind } : null;
  }
  return null;
}

/** `<task_id>.tap.json`. */
export function recordName(taskId: string): string {
  return taskId + RECORD_SUFFIX;
}

/** `<task_id>@<epoch>.tap.json`. */
export function claimName(taskId: string, epoch: number): string {
  return `${taskId}@${epoch}${RECORD_SUFFIX}`;
}

/** The task id of a record file name `<task_id>.tap.json`, or null for any other name. */
export function parseRecordName(name: string): string | null {
  if (!name.endsWith(RECORD_SUFFIX)) return null;
  const id = name.slice(0, -RECORD_SUFFIX.length);
  return isIdentifier(id) ? id : null;
}

/** A file of `processing/`, by the role its name gives it. */
export type ProcessingEntry =
  | { kind: 'claim'; taskId: string; epoch: number; name: string }
  | { kind: SidecarKind; taskId: string; epoch: number; name: string }
  | { kind: 'next' | 'commit'; taskId: string; epoch: number; nonce: string; name: string };

const PROCESSING_NAME = /^([a-z0-9][a-z0-9_.-]*)@(0|[1-9][0-9]{0,15})\.(.+)$/;
const NONCE = /^[a-z0-9-]{1,128}$/;

/** Parses a name under `processing/`; null for temp files and names the binding does not define. */
export function parseProcessingName(name: string): ProcessingEntry | null {
  const m = PROCESSING_NAME.exec(name);
  if (!m) return null;
  const taskId = m[1]!;
  const epoch = Number(m[2]);
  const rest = m[3]!;
  if (!isIdentifier(taskId) || !Number.isSafeInteger(epoch)) return null;
  if (rest === 'tap.json') return { kind: 'claim', taskId, epoch, name };
  for (const kind of SIDECAR_KINDS) if (rest === `${kind}.json`) return { kind, taskId, epoch, name };
  const dot = rest.indexOf('.');
  if (dot > 0) {
    const nonce = rest.slice(0, dot);
    const tail = rest.slice(dot + 1);
    if (NONCE.test(nonce) && (tail === 'next.json' || tail === 'commit')) {
      return { kind: tail === 'commit' ? 'commit' : 'next', taskId, epoch, nonce, name };
    }
  }
  return null;
}
