/**
 * The MCP tasks of the MCP facade (spec: bridge-mcp-host#mcp-tasks): a TaskStore of the MCP SDK
 * whose tasks follow TAP tasks. The SDK answers tasks/get, tasks/result, tasks/list and
 * tasks/cancel from it; the facade creates a task for each tools/call that carries `task`, moves
 * its status as the TAP task's state changes, and ends it with the call's tool result. A
 * tasks/cancel that reaches a task whose TAP task still runs sends that task its task.cancel.
 */
import { randomUUID } from 'node:crypto';
import type { CreateTaskOptions, TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import type { Request, RequestId, Result, Task } from '@modelcontextprotocol/sdk/types.js';
import type { McpTaskStatus } from './mcp-host-mapping.ts';

/** How often a host is asked to poll tasks/get, in milliseconds, unless the call asked for its own interval. */
export const TASK_POLL_MS = 1000;
/** How long a task is kept after its creation when the call names no ttl: one hour. */
export const TASK_TTL_MS = 3_600_000;
/** The longest ttl the facade grants, whatever the call asks: one day. */
export const TASK_MAX_TTL_MS = 86_400_000;
/** How many tasks one tasks/list page gives. */
const LIST_PAGE = 100;

const TERMINAL = new Set<McpTaskStatus>(['completed', 'failed', 'cancelled']);

/** One MCP task and what the facade knows of its TAP task. */
interface Entry {
  task: Task;
  sessionId: string | undefined;
  /** The status the TAP task's state maps to (before any elicitation the facade has open for it). */
  mapped: McpTaskStatus;
  /** Elicitations the facade has put to the host for this task and not yet had answered. */
  asking: number;
  /** The call's outcome: its tool result, or the JSON-RPC error a plain call would have answered. */
  outcome: Promise<Result>;
  settle(outcome: Result | Error): void;
  settled: boolean;
  /** Sends the TAP task its task.cancel; set once the facade follows the task. */
  cancel?: () => void;
}

/**
 * A TaskStore whose tasks are the facade's calls as MCP tasks; `notify` hears each change of
 * status, `forget` each task whose ttl has passed (to drop what is still queued for it).
 */
export class FacadeTaskStore implements TaskStore {
  private readonly entries = new Map<string, Entry>();
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();

  constructor(
    private readonly pollInterval: number = TASK_POLL_MS,
    private readonly notify: (task: Task) => void = () => {},
    private readonly forget: (taskId: string) => void = () => {},
  ) {}

  async createTask(params: CreateTaskOptions, _requestId: RequestId, _request: Request, sessionId?: string): Promise<Task> {
    const now = new Date().toISOString();
    const ttl = params.ttl === undefined || params.ttl === null ? TASK_TTL_MS : Math.min(params.ttl, TASK_MAX_TTL_MS);
    const task: Task = {
      taskId: randomUUID(),
      status: 'working',
      ttl,
      createdAt: now,
      lastUpdatedAt: now,
      pollInterval: params.pollInterval ?? this.pollInterval,
    };
    let resolve!: (result: Result) => void;
    let reject!: (error: Error) => void;
    const outcome = new Promise<Result>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    outcome.catch(() => {});
    const entry: Entry = {
      task,
      sessionId,
      mapped: 'working',
      asking: 0,
      outcome,
      settled: false,
      settle: (o) => {
        entry.settled = true;
        if (o instanceof Error) reject(o);
        else resolve(o);
      },
    };
    this.entries.set(task.taskId, entry);
    return { ...task };
  }

  async getTask(taskId: string, sessionId?: string): Promise<Task | null> {
    const entry = this.lookup(taskId, sessionId);
    return entry === undefined ? null : { ...entry.task };
  }

  /** The SDK's own way to end a task; the facade ends its tasks with end(). */
  async storeTaskResult(taskId: string, status: 'completed' | 'failed', result: Result, sessionId?: string): Promise<void> {
    if (this.lookup(taskId, sessionId) !== undefined) this.end(taskId, status, result);
  }

  /** The call's tool result, once its TAP task has ended (a task cancelled by tasks/cancel waits for its TAP result). */
  async getTaskResult(taskId: string, sessionId?: string): Promise<Result> {
    const entry = this.lookup(taskId, sessionId);
    if (entry === undefined) throw new Error(`no task ${taskId}: it never was, or its ttl has passed`);
    return entry.outcome;
  }

  /**
   * A change of status from the SDK: tasks/cancel sets `cancelled`, and the TAP task, if it still
   * runs, gets its task.cancel (spec: bridge-mcp-host#mcp-tasks).
   */
  async updateTaskStatus(taskId: string, status: Task['status'], statusMessage?: string, sessionId?: string): Promise<void> {
    const entry = this.lookup(taskId, sessionId);
    if (entry === undefined) throw new Error(`no task ${taskId}: it never was, or its ttl has passed`);
    if (status === 'cancelled' && !entry.settled) entry.cancel?.();
    this.set(entry, status, statusMessage);
  }

  async listTasks(cursor?: string, sessionId?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    const ids = [...this.entries.keys()].filter((id) => this.lookup(id, sessionId) !== undefined);
    let start = 0;
    if (cursor !== undefined) {
      start = ids.indexOf(cursor) + 1;
      if (start === 0) throw new Error(`the cursor ${cursor} names no task listed: list again without a cursor`);
    }
    const page = ids.slice(start, start + LIST_PAGE);
    const tasks = page.map((id) => ({ ...this.entries.get(id)!.task }));
    return start + LIST_PAGE < ids.length ? { tasks, nextCursor: page.at(-1)! } : { tasks };
  }

  /** Ties the MCP task to its TAP task: `cancel` sends the TAP task its task.cancel. */
  follow(taskId: string, cancel: () => void): void {
    const entry = this.entries.get(taskId);
    if (entry !== undefined) entry.cancel = cancel;
  }

  /** The TAP task's state maps to `status` now; a terminal status waits for end(), which brings the result with it. */
  moved(taskId: string, status: McpTaskStatus): void {
    const entry = this.entries.get(taskId);
    if (entry === undefined || TERMINAL.has(status)) return;
    entry.mapped = status;
    this.set(entry, this.statusOf(entry));
  }

  /** The facade puts an elicitation to the host for this task (+1) or has its answer (-1): the task is input_required meanwhile. */
  asking(taskId: string, delta: 1 | -1): void {
    const entry = this.entries.get(taskId);
    if (entry === undefined) return;
    entry.asking += delta;
    this.set(entry, this.statusOf(entry));
  }

  /** Ends the task with the call's outcome (a tool result, or an error), its status `status` unless tasks/cancel has already cancelled it. */
  end(taskId: string, status: McpTaskStatus, outcome: object, statusMessage?: string): void {
    const entry = this.entries.get(taskId);
    if (entry === undefined || entry.settled) return;
    entry.settle(outcome as Result | Error);
    this.set(entry, status, statusMessage);
    // The task is kept until its ttl has passed since its creation, and never forgotten while its TAP task ran.
    const left = Date.parse(entry.task.createdAt) + (entry.task.ttl ?? TASK_MAX_TTL_MS) - Date.now();
    const timer = setTimeout(
      () => {
        this.timers.delete(timer);
        this.entries.delete(taskId);
        this.forget(taskId);
      },
      Math.max(0, left),
    );
    timer.unref?.();
    this.timers.add(timer);
  }

  /** Forgets every task and stops the timers of their ttl. */
  close(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.entries.clear();
  }

  private statusOf(entry: Entry): McpTaskStatus {
    return entry.mapped === 'working' && entry.asking > 0 ? 'input_required' : entry.mapped;
  }

  /** Sets a status; a terminal status is final, as MCP requires. */
  private set(entry: Entry, status: Task['status'], statusMessage?: string): void {
    if (TERMINAL.has(entry.task.status) || (entry.task.status === status && statusMessage === undefined)) return;
    entry.task = { ...entry.task, status, lastUpdatedAt: new Date().toISOString() };
    if (statusMessage !== undefined) entry.task.statusMessage = statusMessage;
    this.notify({ ...entry.task });
  }

  /** A task as `sessionId` may see it: one created in another MCP session is not found. */
  private lookup(taskId: string, sessionId: string | undefined): Entry | undefined {
    const entry = this.entries.get(taskId);
    if (entry === undefined) return undefined;
    if (sessionId !== undefined && entry.sessionId !== undefined && entry.sessionId !== sessionId) return undefined;
    return entry;
  }
}
