/**
 * One TAP task as the A2A facade holds it (spec: bridge-a2a#tasks): the A2A Task built from the
 * TAP stream, every A2A event made of it in order (each with its TAP sequence), and the streams
 * that follow it. A stream that joins late (resubscribe) gets the Task as it stands, then the
 * events after the sequence its client last saw, then the live ones: nothing is lost between
 * them, because events are appended and delivered synchronously.
 */
import type { Message, StreamResponse, Task } from '@a2a-js/sdk';
import type { TaskHandle } from '../client/index.ts';
import type { FacadeTask } from './mesh-target.ts';
import {
  A2A_STATE,
  applyEvent,
  eventsOf,
  isInterrupted,
  isTerminal,
  KEY,
  refusedOf,
  type A2aState,
  type TaskRef,
  type TapStreamMessage,
} from './a2a-mapping.ts';

/** The sequence of an A2A event the facade made (its metadata "tap/sequence"). */
function sequenceOf(event: StreamResponse): number {
  const p = event.payload;
  const meta = p?.$case === 'statusUpdate' || p?.$case === 'artifactUpdate' ? p.value.metadata : undefined;
  return typeof meta?.[KEY.sequence] === 'number' ? (meta[KEY.sequence] as number) : 0;
}

/** What an A2A task follows: a session's TaskHandle, which answers input, or a routed mesh task, which does not. */
export type A2aFollowed = FacadeTask & { answer?: TaskHandle['answer'] };

/** True for the stream messages that ask the requester for input (spec: tasks#input-required). */
function asksForInput(m: TapStreamMessage): boolean {
  return m.type === 'input.request' || (m.type === 'task.event' && m.payload.kind === 'state' && m.payload.state === 'input_required');
}

/** A TAP task seen as an A2A task. */
export class A2aTask {
  readonly task: Task;
  private readonly events: StreamResponse[] = [];
  private readonly listeners = new Set<(e: StreamResponse) => void>();
  private handle?: A2aFollowed;
  /** Why the facade cancelled the task itself, when it did. */
  private cancelledBecause?: string;
  private changedAt = Date.now();

  constructor(
    readonly ref: TaskRef,
    first: Message,
    readonly capability: string,
  ) {
    this.task = {
      id: ref.id,
      contextId: ref.contextId,
      status: { state: A2A_STATE.SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [],
      history: [{ ...first, taskId: ref.id, contextId: ref.contextId }],
      metadata: { [KEY.capability]: capability },
    };
  }

  /** The task's A2A state now. */
  get state(): A2aState | undefined {
    return this.task.status?.state as A2aState | undefined;
  }

  /** The TAP sequence of the newest event. */
  get lastSequence(): number {
    const last = this.events[this.events.length - 1];
    return last === undefined ? 0 : sequenceOf(last);
  }

  /** The TAP handle following the task. */
  get tap(): A2aFollowed {
    return this.handle!;
  }

  /**
   * Follows `handle`'s stream until its result, or records the refusal of its request. A stream
   * of a later attempt (a mesh task that moved, under a new TAP task id) is numbered on from the
   * last sequence before it, so that "tap/sequence" only grows. With `inputCannotReach`, a task
   * that asks for input is cancelled for that reason instead of waiting (spec: bridge-a2a#mesh).
   */
  follow(handle: A2aFollowed, options: { inputCannotReach?: string } = {}): void {
    this.handle = handle;
    void (async () => {
      try {
        let attempt: string | undefined;
        let base = 0;
        let last = 0;
        for await (const raw of handle.messages) {
          const m = raw as unknown as TapStreamMessage;
          if (m.task_id !== undefined && attempt !== undefined && m.task_id !== attempt) base = last;
          attempt = m.task_id ?? attempt;
          const numbered = m.sequence === undefined ? m : { ...m, sequence: base + m.sequence };
          last = numbered.sequence ?? last;
          const why = options.inputCannotReach;
          if (why !== undefined && asksForInput(m)) {
            if (this.cancelledBecause === undefined) {
              this.cancelledBecause = why;
              handle.cancel(why).catch(() => {});
            }
            continue;
          }
          for (const e of eventsOf(numbered, this.ref, this.cancelledBecause)) this.add(e);
        }
      } catch {
        // The handle failed: its result says how.
      }
      await handle.result.catch((err: { code?: string; message: string; payload?: { message: string } }) => {
        if (!isTerminal(this.state))
          this.add(refusedOf(this.ref, { code: err.code ?? 'INTERNAL_ERROR', message: err.payload?.message ?? err.message }));
      });
    })();
  }

  /** Adds the user's message that answered the task to its history. */
  addUserMessage(message: Message): void {
    this.task.history.push({ ...message, taskId: this.ref.id, contextId: this.ref.contextId });
  }

  /** When the task last changed, in ms since the epoch. */
  get updatedAt(): number {
    return this.changedAt;
  }

  private add(event: StreamResponse): void {
    this.changedAt = Date.now();
    this.events.push(event);
    applyEvent(this.task, event);
    for (const l of [...this.listeners]) l(event);
  }

  /** A copy of the Task, with at most `historyLength` messages of history when given. */
  snapshot(historyLength?: number): Task {
    const history =
      historyLength === undefined ? [...this.task.history] : this.task.history.slice(-historyLength || this.task.history.length);
    return { ...this.task, history: historyLength === 0 ? [] : history, artifacts: [...this.task.artifacts] };
  }

  /** Resolves once the task is terminal, or interrupted by an event after `afterSequence`. */
  settled(afterSequence = 0): Promise<Task> {
    return new Promise((resolve) => {
      const check = (e?: StreamResponse) => {
        if (
          isTerminal(this.state) ||
          (isInterrupted(this.state) && (e === undefined ? this.lastSequence : sequenceOf(e)) > afterSequence)
        ) {
          this.listeners.delete(check);
          resolve(this.snapshot());
        }
      };
      this.listeners.add(check);
      check();
    });
  }

  /**
   * The stream of the task (spec: bridge-a2a#resubscribe): the Task now, then every event whose
   * sequence is after `afterSequence` (none of those already in the Task when it is undefined),
   * then the live ones until the task ends, or waits for its client after `interruptAfter` when given.
   */
  async *stream(afterSequence?: number, options: { interruptAfter?: number } = {}): AsyncGenerator<StreamResponse> {
    const queue: StreamResponse[] = [];
    let wake: (() => void) | undefined;
    const listener = (e: StreamResponse) => {
      queue.push(e);
      wake?.();
    };
    // Copy and subscribe in one turn: no event can fall between the two.
    const task = this.snapshot();
    if (afterSequence !== undefined) queue.push(...this.events.filter((e) => sequenceOf(e) > afterSequence));
    this.listeners.add(listener);
    try {
      yield { payload: { $case: 'task', value: task } };
      if (this.ends(task, options.interruptAfter) && queue.length === 0) return;
      for (;;) {
        while (queue.length > 0) {
          const e = queue.shift()!;
          yield e;
          if (queue.length === 0 && this.endsWith(e, options.interruptAfter)) return;
        }
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    } finally {
      this.listeners.delete(listener);
    }
  }

  private ends(task: Task, interruptAfter: number | undefined): boolean {
    const state = task.status?.state as A2aState | undefined;
    return isTerminal(state) || (interruptAfter !== undefined && isInterrupted(state) && this.lastSequence > interruptAfter);
  }

  private endsWith(e: StreamResponse, interruptAfter: number | undefined): boolean {
    const p = e.payload;
    if (p?.$case !== 'statusUpdate') return false;
    const state = p.value.status?.state as A2aState | undefined;
    return isTerminal(state) || (interruptAfter !== undefined && isInterrupted(state) && sequenceOf(e) > interruptAfter);
  }
}
