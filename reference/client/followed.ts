/**
 * What a followed task shows of its stream, shared by a client's TaskHandle and a mesh's
 * MeshTask: the current attempt's task id, state, last sequence, hand-off and plan, read from
 * what that attempt follows, and the messages kept so far with their iterators (spec: tasks#sequences).
 */
import type { MessageOf } from '../../schemas/src/index.ts';
import type { Feed } from './feed.ts';
import type { HandoffPayload, InputRequestPayload, KnownState, StreamMessage } from './types.ts';

/** What the getters read: the task stream (a client's handle) or the handle (a mesh task) of the current attempt. */
export interface StreamView {
  readonly taskId: string;
  readonly state: KnownState;
  readonly lastSequence: number;
  readonly handoff?: HandoffPayload;
  readonly plan?: { plan_id: string; state: string };
  readonly pendingInput?: InputRequestPayload;
}

/** A task followed across attempts: the getters every handle of one has. */
export abstract class FollowedTask {
  /** Every task id tried, in order. */
  readonly attempts: string[] = [];
  /** True once the result arrived or the task failed. */
  protected done = false;

  protected constructor(protected readonly feed: Feed<StreamMessage>) {}

  /** What the current attempt follows, once there is one. */
  protected abstract followed(): StreamView | undefined;

  /** The current task id (it changes on a retry or a move). */
  get taskId(): string {
    return this.followed()?.taskId ?? this.attempts[this.attempts.length - 1] ?? '';
  }

  /** The state the stream last reported ('requested' until accepted). */
  get state(): KnownState {
    return this.followed()?.state ?? 'requested';
  }

  /** The last sequence received for the current task. */
  get lastSequence(): number {
    return this.followed()?.lastSequence ?? 0;
  }

  /** The hand-off the agent sent for the task at shutdown, if any. */
  get handoff(): HandoffPayload | undefined {
    return this.followed()?.handoff;
  }

  /** The current plan and its state, as far as the client knows. */
  get plan(): { plan_id: string; state: string } | undefined {
    return this.followed()?.plan;
  }

  /** TAP 1.1: the input request the task waits on, while it is input_required; answer it with `answer` (spec: tasks#input-required). */
  get pendingInput(): InputRequestPayload | undefined {
    return this.followed()?.pendingInput;
  }

  /** True once the result arrived or the task failed. */
  get settled(): boolean {
    return this.done;
  }

  /** The messages of the task's stream so far, in order, without the results of attempts that were retried or moved. */
  get log(): readonly StreamMessage[] {
    return this.feed.items;
  }

  /** The task.event messages of the task, in order; ends after the result, throws if the task fails. */
  get events(): AsyncIterable<MessageOf<'task.event'>> {
    return this.feed.iterate((m): m is MessageOf<'task.event'> => m.type === 'task.event');
  }

  /** Every message of the task's stream (accepted, events, plans, hand-off, result), in order. */
  get messages(): AsyncIterable<StreamMessage> {
    return this.feed.iterate((_m): _m is StreamMessage => true);
  }
}
