/**
 * What a task handle needs of its client: ids, streams, requests, timers, and where plans and
 * task ids are reported; `Handle` is the handle type, so that this file needs no import of it
 * (spec: tasks, plans#decision).
 */
import type { PayloadOf, TapMessage } from '../../schemas/src/index.ts';
import type { RetryPolicy } from './backoff.ts';
import type { TapClientError } from './errors.ts';
import type { TaskStream } from './stream.ts';
import type { InputRequestPayload, Logger, PlanSubmitPayload } from './types.ts';

/** The client services a handle relies on. */
export interface TaskHost<Handle> {
  readonly logger?: Logger;
  readonly retry: RetryPolicy;
  newTaskId(): string;
  newIdempotencyKey(): string;
  /**
   * What a new task's requests carry: its metadata (in a session of 1.1 with a traceparent, a new
   * one when none is given or comes from the handler it is submitted from; in a session of 1.0
   * without the trace context of 1.1), its delegation path (1.1), its span when the client traces,
   * and the refusal of a task whose path holds the agent (spec: envelope#trace-context, mesh#delegation).
   */
  beginTask(capability: string, given: NewTask, handle: Handle): BegunTask;
  /** The handle's task ended: its span, when the client traces, ends with it. */
  ended(handle: Handle, error: Error | undefined, result: { status: string; error?: { code: string } } | undefined): void;
  openStream(taskId: string): TaskStream;
  dropStream(taskId: string): void;
  request(type: 'task.request', payload: PayloadOf<'task.request'>, fields: Record<string, unknown>): Promise<TapMessage>;
  request(
    type: 'task.status' | 'task.cancel' | 'task.resume' | 'plan.decision' | 'input.response',
    payload: object,
    fields: Record<string, unknown>,
  ): Promise<TapMessage>;
  /** As `request` for a task.request, with the reply or failure handed to a callback (never within the call), and no promise made. */
  requestThen(
    type: 'task.request',
    payload: PayloadOf<'task.request'>,
    fields: Record<string, unknown>,
    onReply: (reply: TapMessage) => void,
    onError: (err: Error) => void,
  ): void;
  sleep(ms: number): Promise<void>;
  /** The version the session speaks: quiet tasks only in 1.1 (spec: tasks#quiet-tasks). */
  sessionVersion(): string;
  /** True once the session is ending: no more retries. */
  ending(): boolean;
  planSubmitted(handle: Handle, plan: PlanSubmitPayload): boolean;
  /** TAP 1.1: the task asks for input and has no onInput callback: tells the listeners; false when there are none. */
  inputRequested(handle: Handle, request: InputRequestPayload): boolean;
  track(handle: Handle, taskId: string): void;
}

/** What the caller gives of a new task's trace and path. */
export interface NewTask {
  metadata?: Record<string, unknown> | undefined;
  delegation?: readonly string[] | undefined;
}

/** What a new task's requests carry, as the client made it. */
export interface BegunTask {
  metadata?: Record<string, unknown> | undefined;
  delegation?: string[] | undefined;
  /** The agent is on the task's delegation path (TAP-MESH-152), or the input is not I-JSON (TAP-ENV-002): the task is not sent. */
  refusal?: TapClientError | undefined;
}
