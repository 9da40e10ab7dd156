/** Finding a task in the workspace by its id, and listing the records of a directory. */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import type { Workspace } from './workspace.ts';
import { isMissing, listNames, readBounded } from './fsio.ts';
import { parseProcessingName, parseRecordName, type TaskDir } from './layout.ts';
import { MAX_RECORD_BYTES, checkRecordBytes, type RecordCheck } from './record.ts';

/** Where a task is: a published record, a claimed file (with its epoch), or a commit marker mid-transition. */
export interface TaskLocation {
  dir: TaskDir;
  path: string;
  kind: 'record' | 'claim' | 'marker';
  epoch?: number;
}

/** Finds a task by id in every task directory; null when it is nowhere (spec: bindings-workspace#directories). */
export async function locateTask(ws: Workspace, taskId: string): Promise<TaskLocation | null> {
  // A task moves between directories by renames; look a few times before saying it is nowhere.
  for (let round = 0; round < 3; round++) {
    for (const dir of ['pending', 'awaiting', 'completed', 'failed'] as const) {
      const path = ws.paths.record(dir, taskId);
      if (
        await fsp.lstat(path).then(
          () => true,
          (err) => (isMissing(err) ? false : Promise.reject(err)),
        )
      ) {
        return { dir, path, kind: 'record' };
      }
    }
    let best: TaskLocation | null = null;
    for (const name of await listNames(ws.paths.dir('processing'))) {
      const e = parseProcessingName(name);
      if (!e || e.taskId !== taskId || (e.kind !== 'claim' && e.kind !== 'commit')) continue;
      if (!best || e.epoch > (best.epoch ?? -1)) {
        best = {
          dir: 'processing',
          path: join(ws.paths.dir('processing'), name),
          kind: e.kind === 'claim' ? 'claim' : 'marker',
          epoch: e.epoch,
        };
      }
    }
    if (best) return best;
  }
  return null;
}

/** One record file of a directory, checked. */
export interface ListedRecord {
  taskId: string;
  dir: TaskDir;
  path: string;
  check: RecordCheck;
}

/** Reads and checks every record of a published-record directory (pending, awaiting, completed, failed). */
export async function listRecords(ws: Workspace, dir: Exclude<TaskDir, 'processing'>): Promise<ListedRecord[]> {
  const out: ListedRecord[] = [];
  for (const name of (await listNames(ws.paths.dir(dir))).sort()) {
    const taskId = parseRecordName(name);
    if (!taskId) continue;
    const path = ws.paths.record(dir, taskId);
    const read = await readBounded(path, MAX_RECORD_BYTES);
    if (!read) continue;
    out.push({ taskId, dir, path, check: checkRecordBytes(read.bytes, taskId, read.oversized) });
  }
  return out;
}

/** Reads and checks the record a location points at. */
export async function readLocated(loc: TaskLocation, taskId: string): Promise<RecordCheck | null> {
  const read = await readBounded(loc.path, MAX_RECORD_BYTES);
  return read ? checkRecordBytes(read.bytes, taskId, read.oversized) : null;
}
