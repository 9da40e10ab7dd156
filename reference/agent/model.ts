/**
 * The agent's data model, floor 1: the plan records a task carries and the grant it runs under
 * (spec: plans, authorization#grants). Every other module of the runtime may import it.
 */
import type { PayloadOf } from '../../schemas/src/index.ts';
import type { TimerHandle } from '../core/platform.ts';

/** The grant a task.request carries (spec: authorization#grants). */
export type Authorization = NonNullable<PayloadOf<'task.request'>['authorization']>;

/** A plan as plan.submit carries it (spec: plans#submit). */
export type Plan = PayloadOf<'plan.submit'>['plan'];
/** A plan as a handler drafts it: the runtime assigns plan_id. */
export type PlanDraft = Omit<Plan, 'plan_id'>;
/** The states of a plan (spec: plans#states). */
export type PlanState = 'pending' | 'holding' | 'approved' | 'executing' | 'completed' | 'rejected' | 'needs_revision' | 'withdrawn';

/** What the handler learns about its plan: approved (go on), or needs_revision (submit a revision). */
export interface PlanDecision {
  plan_id: string;
  decision: 'approved' | 'needs_revision';
  feedback?: string;
}

/** One plan of a task. */
export interface PlanRecord {
  plan: Plan;
  state: PlanState;
  revisionOf?: string;
  feedback?: string;
  /** The feedback of the decision that asked for a revision. */
  decisionFeedback?: string;
  waiter?: { resolve: (d: PlanDecision) => void; reject: (err: unknown) => void };
  holdTimer?: TimerHandle;
}

/** What a handler asks its requester for (spec: tasks#input-request): a prompt and the JSON Schema of the answer. */
export interface InputAsk {
  prompt: string;
  schema: Record<string, unknown> | boolean;
}

/** The pending input request of a task in input_required (spec: tasks#input-required). */
export interface InputRecord {
  request_id: string;
  prompt: string;
  schema: Record<string, unknown> | boolean;
  /** The check of an answer against `schema`: null when it matches, else its issues. */
  check: (answer: unknown) => Array<{ path: string; keyword: string; message: string }> | null;
  waiter?: { resolve: (answer: unknown) => void; reject: (err: unknown) => void };
}

/**
 * A task's abort flag. The AbortSignal a handler may read is made only when something asks for
 * it, so a task whose handler never looks at its signal costs no AbortController (spec:
 * tasks#cancellation).
 */
export class TaskAbort {
  /** The task was cancelled, timed out or ended; its handler should stop. */
  aborted = false;
  /** Why, once aborted: a TaskAborted, or the shared reason of a task that ended normally. */
  reason: unknown = undefined;
  private controller?: AbortController;
  private listeners?: (() => void)[];

  /** The signal handed to the handler; it fires when `abort` is called, or is already aborted. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  /**
   * The abort an ended task keeps: this one, aborted with `reason` if it was not; or `ended` (an
   * abort already aborted, shared by ended tasks) when nothing listened to this one or made its
   * signal, so that a task kept for the resume window holds no abort of its own.
   */
  end(reason: unknown, ended: TaskAbort): TaskAbort {
    if (this.aborted) return this;
    if (this.controller === undefined && !this.listeners?.length) return ended;
    this.abort(reason);
    return this;
  }

  /** Called once on abort, without an AbortSignal (never, once aborted); the returned function stops listening. */
  listen(fn: () => void): () => void {
    if (this.aborted) return () => {};
    (this.listeners ??= []).push(fn);
    return () => {
      const at = this.listeners?.indexOf(fn) ?? -1;
      if (at >= 0) this.listeners!.splice(at, 1);
    };
  }

  /** Sets the flag, calls the listeners and fires the signal, if one was made; later calls do nothing. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = undefined;
    if (listeners) for (const fn of listeners) fn();
    this.controller?.abort(reason);
  }
}

/** The pending request as a snapshot and a hand-off name it (spec: tasks#input-resume, shutdown#input-shutdown). */
export function pendingInput(p: InputRecord): { request_id: string; prompt: string; schema: Record<string, unknown> | boolean } {
  return { request_id: p.request_id, prompt: p.prompt, schema: p.schema };
}
