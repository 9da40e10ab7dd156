/**
 * The agent's journal: an append-only JSONL file in the state directory, each record written
 * and fsync'd before the message or effect it guards (spec: durability#journal). A torn last
 * line (a crash mid-write) is ignored on reading.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Checkpoint } from './tasks.ts';
import type { SessionInfo } from './sessions.ts';
import type { Plan } from './plans.ts';

/** The journal's file name inside the state directory. */
export const JOURNAL_FILE = 'journal.jsonl';

/** Names a task in the journal. */
export interface TaskRef {
  principal: string;
  task_id: string;
}

/** One journal record. */
export type JournalRecord =
  | { t: 'session'; info: SessionInfo }
  | { t: 'session-end'; id: string }
  | ({
      t: 'task';
      session_id: string;
      capability: string;
      input: unknown;
      authorization?: unknown;
      fingerprint: string;
      idempotency_key?: string;
      previous_task_id?: string;
      attempt: number;
      created_at: number;
      deadline: number;
    } & TaskRef)
  | ({ t: 'msg'; seq: number; text: string; state: string; at: number } & TaskRef)
  | ({ t: 'bind'; session_id: string } & TaskRef)
  | ({ t: 'cancel' } & TaskRef)
  | ({ t: 'ckpt'; checkpoint: Checkpoint } & TaskRef)
  | ({ t: 'effect'; phase: 'begin' | 'end' } & TaskRef)
  | ({ t: 'plan'; plan_id: string; state: string; plan?: Plan; revision_of?: string; feedback?: string } & TaskRef)
  | { t: 'release'; principal: string; capability: string; key: string }
  | { t: 'kv'; key: string; value: unknown };

/** An open journal. */
export class Journal {
  private fd: number;

  private constructor(private readonly dir: string) {
    this.fd = openSync(join(dir, JOURNAL_FILE), 'a');
  }

  /** Opens (creating) the journal in `dir` and returns it with the records already there. */
  static open(dir: string): { journal: Journal; records: JournalRecord[] } {
    mkdirSync(dir, { recursive: true });
    const path = join(dir, JOURNAL_FILE);
    const records: JournalRecord[] = [];
    if (existsSync(path)) {
      const lines = readFileSync(path, 'utf8').split('\n');
      for (const line of lines) {
        if (line.trim() === '') continue;
        try {
          records.push(JSON.parse(line) as JournalRecord);
        } catch {
          // A torn line from a crash mid-write: the record never committed.
        }
      }
    }
    return { journal: new Journal(dir), records };
  }

  /** Appends one record and waits for it to reach the disk. */
  append(record: JournalRecord): void {
    writeSync(this.fd, JSON.stringify(record) + '\n');
    fsyncSync(this.fd);
  }

  /** Replaces the journal with `records` (compaction): temp file, fsync, rename, fsync the directory. */
  rewrite(records: JournalRecord[]): void {
    const tmp = join(this.dir, `.tmp-journal-${process.pid}`);
    const fd = openSync(tmp, 'w');
    try {
      writeSync(fd, records.map((r) => JSON.stringify(r) + '\n').join(''));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, join(this.dir, JOURNAL_FILE));
    syncDir(this.dir);
    closeSync(this.fd);
    this.fd = openSync(join(this.dir, JOURNAL_FILE), 'a');
  }

  close(): void {
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
  }
}

function syncDir(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Some platforms cannot fsync a directory.
  }
}
