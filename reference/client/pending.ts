/**
 * The requests awaiting their direct reply, by message_id (spec: messages#replies). A request
 * with no reply within request_timeout_ms is rejected as indeterminate; after a resume every
 * pending request is re-sent byte for byte, so the agent answers it once (spec: sessions#duplicates).
 * A request made while no session was open waits for that re-send; if it never goes out, it is
 * rejected as unsent, not as indeterminate: the agent cannot have seen it.
 */
import type { TapMessage } from '../../schemas/src/index.ts';
import { ChurnMap } from '../core/churn-map.ts';
import { ClientCode, TapClientError } from './errors.ts';
import type { Clock } from './types.ts';

/** One request and what to do with its reply. */
export interface Pending {
  msg: TapMessage;
  /** True once re-sent after a resume. */
  resent: boolean;
  /** True once written to a transport (a request made while the session was down is not, until re-sent). */
  sent: boolean;
  resolve(reply: TapMessage): void;
  reject(err: Error): void;
}

interface Entry extends Pending {
  /** When the request times out (clock ms), and the timeout it was given. */
  due: number;
  ms: number;
}

/**
 * The pending requests of one client, behind one timer: it fires at the earliest timeout and
 * sweeps every request then due, so a request sets and clears no timer of its own.
 */
export class PendingRequests {
  private readonly byId = new ChurnMap<string, Entry>();
  private timer: unknown;
  /** When the timer fires (clock ms); Infinity when none is set. */
  private timerDue = Number.POSITIVE_INFINITY;

  constructor(
    private readonly clock: Clock,
    private readonly timeoutMs: () => number,
  ) {}

  /**
   * Waits for the reply to `msg`, handed to `resolve`, or its failure, to `reject` (once); `sent`
   * says whether it went out now or waits for a re-send.
   */
  expect(msg: TapMessage, sent: boolean, resolve: (reply: TapMessage) => void, reject: (err: Error) => void): void {
    const entry: Entry = { msg, resolve, reject, due: 0, ms: 0, resent: false, sent };
    this.byId.set(msg.message_id, entry);
    this.arm(entry);
  }

  /** Removes and returns the request `replyTo` answers, if it is pending. */
  take(replyTo: string | undefined): Pending | undefined {
    if (replyTo === undefined) return undefined;
    const entry = this.byId.get(replyTo);
    if (!entry) return undefined;
    this.byId.delete(replyTo);
    if (this.byId.size === 0) this.stopTimer();
    return entry;
  }

  /** Re-sends every pending request unchanged, in the order it was first sent, with a fresh timeout. */
  resendAll(send: (msg: TapMessage) => void): void {
    for (const entry of this.byId.values()) {
      entry.resent = true;
      entry.sent = true;
      this.arm(entry);
      send(entry.msg);
    }
  }

  /**
   * Rejects every pending request with `error`, or, for one that was never sent, with an unsent
   * error; returns those unsent errors by the task id of their task.request.
   */
  rejectAll(error: Error): Map<string, TapClientError> {
    const unsent = new Map<string, TapClientError>();
    this.stopTimer();
    for (const entry of this.byId.values()) {
      this.byId.delete(entry.msg.message_id);
      if (entry.sent) {
        entry.reject(error);
        continue;
      }
      const e = unsentError(entry.msg, error.message);
      if (entry.msg.type === 'task.request' && entry.msg.task_id !== undefined) unsent.set(entry.msg.task_id, e);
      entry.reject(e);
    }
    return unsent;
  }

  /** Gives `entry` a fresh timeout from now. */
  private arm(entry: Entry): void {
    entry.ms = this.timeoutMs();
    entry.due = this.clock.now() + entry.ms;
    this.wakeAt(entry.due);
  }

  /** Makes the timer fire by `due`. */
  private wakeAt(due: number): void {
    if (this.timer !== undefined) {
      if (this.timerDue <= due) return;
      this.clock.clearTimeout(this.timer);
    }
    this.timerDue = due;
    this.timer = this.clock.setTimeout(this.sweep, Math.max(0, due - this.clock.now()));
  }

  private stopTimer(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerDue = Number.POSITIVE_INFINITY;
  }

  /** Rejects every request whose timeout has come, in the order they were made; sets the timer for the next. */
  private readonly sweep = (): void => {
    this.timer = undefined;
    this.timerDue = Number.POSITIVE_INFINITY;
    const now = this.clock.now();
    let next = Number.POSITIVE_INFINITY;
    for (const entry of this.byId.values()) {
      if (entry.due > now) {
        next = Math.min(next, entry.due);
        continue;
      }
      if (this.byId.get(entry.msg.message_id) !== entry) continue;
      this.expire(entry);
    }
    if (next !== Number.POSITIVE_INFINITY && this.byId.size > 0) this.wakeAt(next);
  };

  private expire(entry: Entry): void {
    this.byId.delete(entry.msg.message_id);
    const { ms } = entry;
    const taskId = entry.msg.task_id;
    if (!entry.sent) return entry.reject(unsentError(entry.msg, `no session came back within ${ms} ms`));
    entry.reject(
      new TapClientError(ClientCode.REQUEST_TIMEOUT, `no reply to ${entry.msg.type} within ${ms} ms; the outcome is unknown`, {
        indeterminate: true,
        ...(taskId !== undefined ? { taskId } : {}),
      }),
    );
  }
}

/** The error of a request that never left: retryable, and not indeterminate, for the agent cannot have seen it. */
function unsentError(msg: TapMessage, why: string): TapClientError {
  return new TapClientError(ClientCode.CLOSED, `${msg.type} was never sent, so the agent did not see it: ${why}`, {
    retryable: true,
    unsent: true,
    ...(msg.task_id !== undefined ? { taskId: msg.task_id } : {}),
  });
}
