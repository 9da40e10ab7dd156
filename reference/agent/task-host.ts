/**
 * What plans and the task context need of the task runner: to send the next message of a
 * task's stream, move it through the state machine, end it with its one result, and end it
 * timed out (spec: tasks#states, tasks#sequence, tasks#deadlines). TaskRunner implements it.
 */
import type { MessageType, PayloadOf, TaskState } from '../../schemas/src/index.ts';
import type { Task, TaskOutcome } from './tasks.ts';

/** The task runner as plans and the task context use it. */
export interface TaskHost {
  /** Sends the next message of the task's stream and returns its text (spec: tasks#sequence). */
  emit<T extends MessageType>(task: Task, type: T, payload: PayloadOf<T>): string;
  /** Moves the task to `to`, with its state event (spec: tasks#states). */
  transition(task: Task, to: TaskState): void;
  /** Ends the task with its one result; false when it had ended already (spec: tasks#result). */
  finish(task: Task, outcome: TaskOutcome): boolean;
  /** Ends the task timed out, its deadline having passed (spec: tasks#deadlines). */
  deadlinePassed(task: Task): void;
}
