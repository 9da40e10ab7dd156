/**
 * The client's task table: one stream per task id it follows, the handle following each, and
 * the ids it makes (spec: tasks). Sequenced messages enter here and leave in order, once.
 */
import type { RandomSource } from '../core/index.ts';
import { ChurnMap } from '../core/churn-map.ts';
import { OldestKey } from '../core/oldest.ts';
import type { TaskHandle } from './handle.ts';
import type { ResumeRequest } from './session.ts';
import { TaskStream, type IngestOutcome } from './stream.ts';
import type { StreamMessage } from './types.ts';

/**
 * Ended tasks the table still knows, newest last: `client.task(id)` finds them, and a late copy of
 * one of their messages is a duplicate rather than an unknown task. Older ones are forgotten, so a
 * long-lived client holds what is open and this many more (spec: limits#bounded-tables).
 *
 * An ended handle keeps its messages (3.7 KB for a task of four, 2.2 KB for a quiet one). Kept for
 * 1,024 tasks, at tens of thousands of tasks a second every task outlived two of V8's young-generation
 * collections and was copied twice, into the old generation: the requester spent 35–45 µs of CPU
 * on a four-message task over stdio at 64 in flight, against 24–26 µs with 128 kept.
 */
export const ENDED_TASKS_KEPT = 128;

/** Streams and handles by task id. */
export class TaskTable {
  private readonly streams = new ChurnMap<string, TaskStream>();
  private readonly handles = new ChurnMap<string, TaskHandle>();
  /** Task ids whose stream ended or failed, oldest first. */
  private readonly endedIds = new Set<string>();
  private readonly oldestEnded = new OldestKey(this.endedIds);

  /** 80 random bits drawn once: the table's ids are this prefix and a counter. */
  private readonly prefix: string;
  private count = 0;

  constructor(random: RandomSource) {
    this.prefix = hex(random(10));
  }

  /**
   * A fresh task id: an identifier that can also be a file name, never used before by this table,
   * and apart from other tables' by its random prefix (spec: envelope#identifiers, tasks#request).
   */
  newTaskId(): string {
    return `task-${this.prefix}-${(++this.count).toString(36)}`;
  }

  /** A fresh idempotency key, unique in the same way. */
  newIdempotencyKey(): string {
    return `key-${this.prefix}-${(++this.count).toString(36)}`;
  }

  /** Whether a stream is followed for this task id. */
  follows(taskId: string): boolean {
    return this.streams.has(taskId);
  }

  /** The stream of a task id, created when new. */
  open(taskId: string): TaskStream {
    let s = this.streams.get(taskId);
    if (!s) {
      s = new TaskStream(taskId);
      this.streams.set(taskId, s);
    }
    return s;
  }

  /** The stream of a task id, if followed. */
  stream(taskId: string): TaskStream | undefined {
    return this.streams.get(taskId);
  }

  /** Forgets a stream no task stands behind (a refused request). */
  drop(taskId: string): void {
    const s = this.streams.get(taskId);
    if (s && s.lastSequence === (s.quiet ? 1 : 0)) {
      this.streams.delete(taskId);
      this.handles.delete(taskId);
    }
  }

  /** Remembers which handle follows a task id. */
  track(handle: TaskHandle, taskId: string): void {
    this.handles.set(taskId, handle);
  }

  /** The handle following a task id. */
  handle(taskId: string): TaskHandle | undefined {
    return this.handles.get(taskId);
  }

  /** Feeds a sequenced message to its task's stream; undefined when no stream follows that task. */
  ingest(msg: StreamMessage): IngestOutcome | undefined {
    const stream = this.streams.get(msg.task_id!);
    if (!stream) return undefined;
    const out = stream.ingest(msg);
    if (out.kind === 'delivered' && stream.ended) this.retire(stream.taskId);
    return out;
  }

  /** Counts a task among the ended ones, forgetting the oldest beyond `ENDED_TASKS_KEPT`. */
  private retire(taskId: string): void {
    this.endedIds.delete(taskId);
    this.endedIds.add(taskId);
    while (this.endedIds.size > ENDED_TASKS_KEPT) {
      const oldest = this.oldestEnded.take();
      this.endedIds.delete(oldest);
      // A task id that was opened again since (a retry adopting it) is followed afresh: keep it.
      if (this.streams.get(oldest)?.ended !== false) {
        this.streams.delete(oldest);
        this.handles.delete(oldest);
      }
    }
  }

  /** Each open task with the last sequence received: what a resume asks for (spec: resume#reconnect). */
  resumeList(): ResumeRequest['tasks'] {
    const tasks: ResumeRequest['tasks'] = [];
    for (const s of this.streams.values()) {
      if (!s.ended && s.lastSequence > 0) tasks.push({ task_id: s.taskId, last_sequence: s.lastSequence });
    }
    return tasks;
  }

  /** Stops following every open task and fails its handle with `error`, or with what `errorOf` gives for its task id. */
  failOpen(error: Error, errorOf?: (taskId: string) => Error | undefined): void {
    for (const [taskId, s] of this.streams.entries()) {
      if (s.ended) continue;
      this.streams.delete(taskId);
      this.handles.get(taskId)?.fail(errorOf?.(taskId) ?? error);
      this.retire(taskId);
    }
  }
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
