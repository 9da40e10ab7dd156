/**
 * One attempt of a submitted task: the task.request it sends, what acceptance tells the caller,
 * and how a task followed by status learns its result (spec: tasks#retries, tasks#idempotency,
 * resume#attachment).
 */
import type { MessageOf, PayloadOf, TapMessage } from '../../schemas/src/index.ts';
import { extended } from '../core/extended.ts';
import { ClientCode, TapClientError } from './errors.ts';
import type { Authorization, ResultPayload, SnapshotPayload } from './types.ts';

/** What acceptance told the caller. */
export interface Accepted {
  /** The task the agent is running: the retry's own id, or the original task's id when a retry was answered with its snapshot. */
  taskId: string;
  capability: string;
  /** The effective deadline, when the agent stated one. */
  deadline?: string;
  /** The task this one retries, as task.accepted named it. */
  previousTaskId?: string;
  /** Set when the request was answered with a snapshot of an existing task (spec: tasks#idempotency). */
  snapshot?: SnapshotPayload;
}

/** How an attempt ended: its result, and whether a new attempt follows. */
export type Ending = { result: ResultPayload; retry: boolean };

/** Retryable endings that a retry on the same session cannot help. */
export const ENDINGS_NOT_RETRIED = new Set(['SHUTTING_DOWN', 'SESSION_LOST']);

/** The payload of an attempt's task.request; `quiet` as the session allows it (spec: tasks#quiet-1-0). */
export function taskRequestPayload(
  capability: string,
  input: unknown,
  options: { authorization?: Authorization; timeoutMs?: number; delegation?: readonly string[] },
  quiet: boolean,
): PayloadOf<'task.request'> {
  const p: PayloadOf<'task.request'> = { capability, input };
  if (options.delegation?.length) p.delegation = [...options.delegation];
  if (options.authorization) p.authorization = options.authorization;
  if (options.timeoutMs !== undefined) p.timeout_ms = options.timeoutMs;
  if (quiet) p.quiet = true;
  return p;
}

/** The envelope fields of an attempt's task.request: its task id, the shared idempotency key, the deadline and metadata.attempt. */
export function taskRequestFields(
  taskId: string,
  idempotencyKey: string,
  attempt: number,
  options: { deadline?: Date | string; metadata?: Record<string, unknown> },
): Record<string, unknown> {
  const fields: Record<string, unknown> = { task_id: taskId, idempotency_key: idempotencyKey };
  const { deadline } = options;
  if (deadline !== undefined) fields.deadline = typeof deadline === 'string' ? deadline : deadline.toISOString();
  // A caller's metadata.attempt numbers the first attempt: a task moved from another agent counts on (spec: mesh#moving).
  const first = typeof options.metadata?.attempt === 'number' ? options.metadata.attempt : 1;
  fields.metadata = extended(options.metadata, { attempt: first + attempt - 1 });
  return fields;
}

/** What polling needs of the client. */
export interface StatusSource {
  sleep(ms: number): Promise<void>;
  request(type: 'task.status', payload: object, fields: Record<string, unknown>): Promise<TapMessage>;
}

/**
 * A quiet request is answered by its error or snapshot, or the task's first stream message. A
 * task that sent nothing within request_timeout_ms is asked for by task.status: its snapshot says
 * it runs, and is followed as a repeat's would be (spec: tasks#quiet-requests). Any other failure
 * of the request is `err` again.
 */
export async function quietUnanswered(host: StatusSource, err: unknown, taskId: string): Promise<TapMessage> {
  if (!(err instanceof TapClientError) || err.code !== ClientCode.REQUEST_TIMEOUT) throw err;
  const status = await host.request('task.status', {}, { task_id: taskId });
  if (status.type !== 'task.snapshot') throw err;
  return status;
}

/** Asks for the task's status, backing off from 100 ms to 2 s, until its snapshot carries the result. */
export async function pollUntilEnded(host: StatusSource, taskId: string): Promise<ResultPayload> {
  for (let delay = 100; ; delay = Math.min(delay * 2, 2000)) {
    await host.sleep(delay);
    const status = await host.request('task.status', {}, { task_id: taskId });
    if (status.type === 'error') throw TapClientError.fromPayload(status.payload, taskId);
    if (status.type === 'task.snapshot' && status.payload.result) return status.payload.result;
  }
}

/** What acceptance tells the caller: from task.accepted, or from the snapshot that answered a retry with the original task (spec: tasks#idempotency). */
export function acceptedOf(msg: MessageOf<'task.accepted'> | MessageOf<'task.snapshot'>, taskId: string): Accepted {
  if (msg.type === 'task.snapshot') {
    const accepted: Accepted = { taskId, capability: msg.payload.capability, snapshot: msg.payload };
    if (msg.payload.previous_task_id !== undefined) accepted.previousTaskId = msg.payload.previous_task_id;
    return accepted;
  }
  const a: Accepted = { taskId: msg.task_id ?? taskId, capability: msg.payload.capability };
  if (msg.payload.deadline !== undefined) a.deadline = msg.payload.deadline;
  if (msg.payload.previous_task_id !== undefined) a.previousTaskId = msg.payload.previous_task_id;
  return a;
}

/** The payload of the task.snapshot that answers a request; throws the error it was answered with instead (spec: tasks#snapshot). */
export function snapshotPayload(reply: TapMessage, taskId: string): SnapshotPayload {
  if (reply.type === 'error') throw TapClientError.fromPayload(reply.payload, taskId);
  if (reply.type !== 'task.snapshot') throw new TapClientError('PROTOCOL_VIOLATION', `expected task.snapshot, got ${reply.type}`);
  return reply.payload;
}

/** The trace members of a task's metadata: trace_id, span_id (spec: mesh#trace), and in 1.1 the trace context. */
export function traceMembers(
  m: Record<string, unknown> | undefined,
): { trace_id?: string; span_id?: string; traceparent?: string; tracestate?: string; baggage?: string } | undefined {
  const out: Record<string, string> = {};
  for (const k of ['trace_id', 'span_id', 'traceparent', 'tracestate', 'baggage']) if (typeof m?.[k] === 'string') out[k] = m[k] as string;
  return Object.keys(out).length ? out : undefined;
}
