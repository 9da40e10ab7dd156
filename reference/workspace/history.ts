/**
 * Task history: appending what a phase did, compacting older entries into
 * `tasks/history/<task_id>.<epoch>.jsonl` behind a summary entry, and reading the whole history
 * back (spec: bindings-workspace#history-compaction).
 */
import { join } from 'node:path';
import type { Workspace } from './workspace.ts';
import { WorkspaceError } from './errors.ts';
import { readBounded, writeAtomic } from './fsio.ts';
import type { HistoryEntry, TaskRecord } from './record.ts';

/** The pattern a `history_ref` must match: a bare file name (spec: bindings-workspace#history-compaction). */
export const HISTORY_REF = /^[a-z0-9][a-z0-9_.-]*\.jsonl$/;

/** The largest history file the library reads. */
const MAX_HISTORY_BYTES = 64 * 1024 * 1024;

/** The absolute path of a history file; refuses anything but a bare name under tasks/history/ (spec: bindings-workspace#history-compaction). */
export function historyPath(ws: Workspace, ref: string): string {
  if (!HISTORY_REF.test(ref) || ref.length > 160 || ref.includes('..')) {
    throw new WorkspaceError(
      'INVALID_RECORD',
      `history_ref ${JSON.stringify(ref)} is not a bare file name ending in .jsonl`,
      ws.paths.history,
    );
  }
  return join(ws.paths.history, ref);
}

/** The entries of a history file, oldest first; [] when it is missing. */
export async function readHistoryFile(ws: Workspace, ref: string): Promise<HistoryEntry[]> {
  const read = await readBounded(historyPath(ws, ref), MAX_HISTORY_BYTES);
  if (!read) return [];
  if (read.oversized) throw new WorkspaceError('IO', `history file ${ref} is larger than ${MAX_HISTORY_BYTES} bytes`, historyPath(ws, ref));
  return Buffer.from(read.bytes)
    .toString('utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as HistoryEntry);
}

/** A record's whole history: the compacted entries from its history file, then its own entries without the summary. */
export async function fullHistory(ws: Workspace, record: TaskRecord): Promise<{ entries: HistoryEntry[]; compacted: number }> {
  const own = record.context.history.filter((e) => e.summary !== true);
  if (!record.history_ref) return { entries: own, compacted: 0 };
  const older = await readHistoryFile(ws, record.history_ref);
  return { entries: [...older, ...own], compacted: older.length };
}

/**
 * Appends `entry` to the record's history (in place). When the history would exceed
 * `history_limit`, the older entries — with those of any earlier history file — are written to
 * `tasks/history/<task_id>.<epoch>.jsonl` before the record refers to it, and the record keeps a
 * summary entry and the most recent entries (spec: bindings-workspace#history-compaction).
 */
export async function appendHistory(ws: Workspace, record: TaskRecord, entry: HistoryEntry, epoch: number, actor: string): Promise<void> {
  const limit = ws.config.history_limit;
  const own = [...record.context.history.filter((e) => e.summary !== true), entry];
  const hasSummary = record.context.history.some((e) => e.summary === true);
  if (own.length + (hasSummary ? 1 : 0) <= limit) {
    record.context.history = hasSummary ? [record.context.history.find((e) => e.summary === true)!, ...own] : own;
    return;
  }
  const keep = limit - 1;
  const moved = own.slice(0, own.length - keep);
  const earlier = record.history_ref ? await readHistoryFile(ws, record.history_ref) : [];
  const all = [...earlier, ...moved];
  const ref = `${record.task_id}.${epoch}.jsonl`;
  await writeAtomic(historyPath(ws, ref), all.map((e) => JSON.stringify(e)).join('\n') + '\n');
  const phases: Record<string, number> = {};
  for (const e of all) phases[e.phase] = (phases[e.phase] ?? 0) + 1;
  const summary: HistoryEntry = {
    agent: actor,
    phase: moved[moved.length - 1]!.phase,
    timestamp: entry.timestamp,
    input: null,
    output: { compacted: all.length, history_ref: ref, from: all[0]!.timestamp, to: all[all.length - 1]!.timestamp, phases },
    artifacts: [],
    summary: true,
  };
  record.context.history = [summary, ...own.slice(own.length - keep)];
  record.history_ref = ref;
}
