/**
 * What a task handle needs of its client: ids, streams, requests, timers, and where plans and
 * task ids are reported; `Handle` is the handle type, so that this file needs no import of it
 * (spec: tasks, plans#decision).
 */
import type { PayloadOf, TapMessage } from '../../schemas/src/index.ts';
import type { RetryPolicy } from './backoff.ts';
import type { TaskStream } from './stream.ts';
import type { InputRequestPayload, Logger, PlanSubmitPayload } from './types.ts';

/** The client services a handle relies on. */
export interface TaskHost<Handle> {
  readonly logger?: Logger;
  readonly retry: RetryPolicy;
  newTaskId(): string;
  newIdempotencyKey(): string;
  /**
   * The metadata a new task's requests carry: in a session of 1.1 with a traceparent (a new one
   * when `given` has none), in a session of 1.0 without the trace context of 1.1 (spec: envelope#trace-context).
   */
  taskMetadata(given: Record<string, unknown> | undefined): Record<string, unknown> | undefined;
  openStream(taskId: string): TaskStream;
  dropStream(taskId: string): void;
  request(type: 'task.request', payload: PayloadOf<'task.request'>, fields: Record<string, unknown>): Promise<TapMessage>;
  request(
    type: 'task.status' | 'task.cancel' | 'task.resume' | 'plan.decision' | 'input.response',
    payload: object,
    fields: Record<string, unknown>,
  ): Promise<TapMessage>;
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
