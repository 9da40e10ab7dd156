/**
 * A new task, made in one shape: every member of Task set in one order, those it does not have yet
 * undefined. Each task then has the same hidden class from its first member to its last, and keeps
 * its members in the object itself rather than in a second array grown as members are added.
 */
import { TaskAbort } from './model.ts';
import type { Task } from './tasks.ts';

/** What a task is made of when its request is taken (or its journal record read). */
export type NewTask = Pick<Task, 'principal' | 'taskId' | 'sessionId' | 'capability' | 'input' | 'fingerprint' | 'attempt' | 'deadline'> &
  Partial<Pick<Task, 'share' | 'authorization' | 'idempotencyKey' | 'previousTaskId' | 'trace' | 'carried' | 'delegation' | 'quiet'>> & {
    /** When the task was made, in ms since the epoch. */
    createdAt: number;
  };

/** The task `f` describes, accepted and not yet started; a quiet one has taken sequence 1 unsent (spec: tasks#quiet-sequences). */
export function newTask(f: NewTask): Task {
  return {
    principal: f.principal,
    share: f.share,
    taskId: f.taskId,
    sessionId: f.sessionId,
    capability: f.capability,
    input: f.input,
    authorization: f.authorization,
    fingerprint: f.fingerprint,
    idempotencyKey: f.idempotencyKey,
    previousTaskId: f.previousTaskId,
    attempt: f.attempt,
    trace: f.trace,
    carried: f.carried,
    delegation: f.delegation,
    quiet: f.quiet,
    state: 'accepted',
    createdAt: f.createdAt,
    updatedAt: f.createdAt,
    deadline: f.deadline,
    lastSequence: f.quiet ? 1 : 0,
    retained: [],
    firstRetained: f.quiet ? 2 : 1,
    result: undefined,
    cancelRequested: false,
    plans: [],
    inputs: undefined,
    checkpoint: undefined,
    effectsBegun: 0,
    effectsEnded: 0,
    abort: new TaskAbort(),
    releaseTimer: undefined,
    deadlineSlot: undefined,
    restored: undefined,
    tableBytes: undefined,
    tableEndedAt: undefined,
  };
}
