/** Shared types of the requester client: clocks, loggers and the payload shapes it hands out. */
import type { MessageOf, PayloadOf, TaskState } from '../../schemas/src/index.ts';

/** Time and timers, injectable so tests can drive them. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `fn` after `ms` milliseconds; returns a handle for `clearTimeout`. */
  setTimeout(fn: () => void, ms: number): unknown;
  /** Cancels a timer made by `setTimeout`. */
  clearTimeout(handle: unknown): void;
}

/** The platform clock; timers never keep the process alive on their own. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    (t as { unref?: () => void }).unref?.();
    return t;
  },
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** Where the client reports what it does; every method is optional. */
export interface Logger {
  debug?(message: string, fields?: Record<string, unknown>): void;
  info?(message: string, fields?: Record<string, unknown>): void;
  warn?(message: string, fields?: Record<string, unknown>): void;
  error?(message: string, fields?: Record<string, unknown>): void;
}

/** One frame as it crossed the wire, for transcripts: `text` is the serialized message. */
export interface WireEntry {
  dir: 'in' | 'out';
  text: string;
}

export type ErrorPayload = PayloadOf<'error'>;
export type ResultPayload = PayloadOf<'task.result'>;
export type SnapshotPayload = PayloadOf<'task.snapshot'>;
export type HandoffPayload = PayloadOf<'task.handoff'>;
export type PlanSubmitPayload = PayloadOf<'plan.submit'>;
export type SessionParams = PayloadOf<'handshake.ack'>['params'];
export type ProposedParams = Partial<SessionParams>;
export type AgentCard = PayloadOf<'handshake.ack'>['agent'];
export type Authorization = NonNullable<PayloadOf<'task.request'>['authorization']>;

/** The messages that make up a task's stream, each carrying a `sequence` (spec: tasks#sequence). */
export type StreamMessage =
  | MessageOf<'task.accepted'>
  | MessageOf<'task.event'>
  | MessageOf<'plan.submit'>
  | MessageOf<'task.handoff'>
  | MessageOf<'task.result'>;

/** The types of StreamMessage. */
export const STREAM_TYPES: ReadonlySet<string> = new Set(['task.accepted', 'task.event', 'plan.submit', 'task.handoff', 'task.result']);

/** What the client last knew of a task's state; 'requested' until the agent answers. */
export type KnownState = TaskState | 'requested';

/** A plan decision, as an approval callback returns it. */
export type PlanDecision =
  | 'approved'
  | 'rejected'
  | 'needs_revision'
  | { decision: 'approved' | 'rejected' | 'needs_revision'; feedback?: string };
