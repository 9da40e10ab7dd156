/** Shared types of the requester client: clocks, loggers and the payload shapes it hands out. */
import type { MessageOf, PayloadOf, TaskState } from '../../schemas/src/index.ts';
import type { Clock } from '../core/platform.ts';

export type { Clock, Logger } from '../core/platform.ts';

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
/** TAP 1.1: an agent's question to its requester, with the JSON Schema of the answer (spec: tasks#input-request). */
export type InputRequestPayload = PayloadOf<'input.request'>;
export type SessionParams = PayloadOf<'handshake.ack'>['params'];
export type ProposedParams = Partial<SessionParams>;
export type AgentCard = PayloadOf<'handshake.ack'>['agent'];
export type Authorization = NonNullable<PayloadOf<'task.request'>['authorization']>;

/** One task of a listing, as it stood when its page was sent (spec: tasks#listing). */
export type TaskSummary = PayloadOf<'task.page'>['tasks'][number];

/** What `listTasks` asks for: a filter, the cursor of the page after the previous one, the page's largest size (1 to 100). */
export interface TaskListOptions {
  state?: TaskState;
  capability?: string;
  cursor?: string;
  limit?: number;
}

/** One page of a listing; `nextCursor` is absent on the last page. */
export interface TaskPage {
  tasks: TaskSummary[];
  nextCursor?: string;
}

/** The messages that make up a task's stream, each carrying a `sequence` (spec: tasks#sequence). */
export type StreamMessage =
  | MessageOf<'task.accepted'>
  | MessageOf<'task.event'>
  | MessageOf<'plan.submit'>
  | MessageOf<'task.handoff'>
  | MessageOf<'task.result'>
  | MessageOf<'input.request'>;

/** The types of StreamMessage. */
export const STREAM_TYPES: ReadonlySet<string> = new Set([
  'task.accepted',
  'task.event',
  'plan.submit',
  'task.handoff',
  'task.result',
  'input.request',
]);

/** What the client last knew of a task's state; 'requested' until the agent answers. */
export type KnownState = TaskState | 'requested';

/** A plan decision, as an approval callback returns it. */
export type PlanDecision =
  | 'approved'
  | 'rejected'
  | 'needs_revision'
  | { decision: 'approved' | 'rejected' | 'needs_revision'; feedback?: string };
