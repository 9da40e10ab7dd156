/**
 * Live events of a workspace, by comparing what the task and agent directories hold from one
 * look to the next: a task queued, claimed, completed or failed; an agent changing its status.
 */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import type { Workspace } from './workspace.ts';
import { readLease, type AgentState } from './agents.ts';
import { listNames, readBounded, readJsonFile } from './fsio.ts';
import { isIdentifier, parseProcessingName, parseRecordName } from './layout.ts';
import { MAX_RECORD_BYTES, checkRecordBytes } from './record.ts';

/** One thing that happened in the workspace. */
export type WorkspaceEvent =
  | { at: string; kind: 'queued'; task_id: string; phase: string | null; epoch: number; attempts: number; target_agent: string }
  | { at: string; kind: 'claimed'; task_id: string; epoch: number; phase: string | null; holder: string | null }
  | { at: string; kind: 'completed'; task_id: string; epoch: number; by: string | null }
  | { at: string; kind: 'failed'; task_id: string; status: string; code: string | null; message: string | null; dead_letter: boolean }
  | { at: string; kind: 'agent'; agent_id: string; status: string; phases: string[] };

type Snapshot = Map<string, string>;

async function look(ws: Workspace): Promise<Snapshot> {
  const snap: Snapshot = new Map();
  for (const dir of ['pending', 'completed', 'failed'] as const) {
    for (const name of await listNames(ws.paths.dir(dir))) {
      if (!parseRecordName(name)) continue;
      const st = await fsp.lstat(join(ws.paths.dir(dir), name)).catch(() => null);
      if (st) snap.set(`${dir}/${name}`, String(st.ino));
    }
  }
  for (const name of await listNames(ws.paths.dir('processing'))) {
    if (parseProcessingName(name)?.kind === 'claim') snap.set(`processing/${name}`, 'claim');
  }
  for (const id of await listNames(ws.paths.agents)) {
    if (!isIdentifier(id)) continue;
    const state = (await readJsonFile(join(ws.paths.agent(id), 'state.json'))) as AgentState | null;
    if (state) snap.set(`agent/${id}`, `${state.status}|${state.phases?.join(',')}`);
  }
  return snap;
}

async function describe(ws: Workspace, key: string, value: string): Promise<WorkspaceEvent | null> {
  const at = new Date().toISOString();
  const [area, name] = key.split('/') as [string, string];
  if (area === 'agent') {
    const [status, phases] = value.split('|') as [string, string];
    return { at, kind: 'agent', agent_id: name, status, phases: phases ? phases.split(',') : [] };
  }
  if (area === 'processing') {
    const e = parseProcessingName(name)!;
    const read = await readBounded(join(ws.paths.dir('processing'), name), MAX_RECORD_BYTES);
    const check = read ? checkRecordBytes(read.bytes, e.taskId, read.oversized) : null;
    const lease = await readLease(ws, e.taskId, e.epoch);
    return {
      at,
      kind: 'claimed',
      task_id: e.taskId,
      epoch: e.epoch,
      phase: check?.ok ? check.record.next_phase : null,
      holder: lease?.agent_id ?? null,
    };
  }
  const taskId = parseRecordName(name)!;
  const read = await readBounded(join(ws.paths.dir(area as 'pending'), name), MAX_RECORD_BYTES);
  if (!read) return null;
  const check = checkRecordBytes(read.bytes, taskId, read.oversized);
  const rec = check.ok ? check.record : null;
  if (area === 'pending') {
    return {
      at,
      kind: 'queued',
      task_id: taskId,
      phase: rec?.next_phase ?? null,
      epoch: rec?.state.epoch ?? 0,
      attempts: rec?.state.attempts ?? 0,
      target_agent: rec?.requirements.target_agent ?? '',
    };
  }
  if (area === 'completed')
    return { at, kind: 'completed', task_id: taskId, epoch: rec?.state.epoch ?? 0, by: rec?.state.processed_by ?? null };
  const err = rec?.state.last_error ?? null;
  return {
    at,
    kind: 'failed',
    task_id: taskId,
    status: rec?.state.status ?? 'failed',
    code: err?.code ?? (check.ok ? null : check.code),
    message: err?.message ?? (check.ok ? null : check.message),
    dead_letter: err?.code === 'MAX_ATTEMPTS',
  };
}

/** Options of watchWorkspace. */
export interface WatchOptions {
  signal: AbortSignal;
  onEvent: (event: WorkspaceEvent) => void;
  /** Time between looks (default 250 ms). */
  intervalMs?: number;
  /** Report what is already there as events first (default false). */
  fromStart?: boolean;
}

/** Reports workspace events until `signal` aborts. */
export async function watchWorkspace(ws: Workspace, o: WatchOptions): Promise<void> {
  let prev: Snapshot = o.fromStart ? new Map() : await look(ws);
  while (!o.signal.aborted) {
    const next = await look(ws);
    for (const [key, value] of next) {
      if (prev.get(key) === value) continue;
      const event = await describe(ws, key, value);
      if (event) o.onEvent(event);
    }
    prev = next;
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, o.intervalMs ?? 250);
      o.signal.addEventListener(
        'abort',
        () => {
          clearTimeout(t);
          resolve();
        },
        { once: true },
      );
    });
  }
}
