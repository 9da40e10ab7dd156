/**
 * The waits of one harness connection: for a message the agent has yet to send, and for the
 * connection's close. Until the agent has sent anything on the connection it may still be
 * starting, so a wait lasts at least the startup time; once it has, each wait restarts with its
 * own timeout (spec: conformance#peer). A wait does not count time in which the harness could not
 * run (stall-aware.ts): the agent was frozen as long.
 */
import type { Received } from './findings.ts';
import { stallAwareTimeout, type StallAwareTimeout } from './stall-aware.ts';

type Waiter = {
  pred: (r: Received) => boolean;
  since: number;
  resolve: (r: Received | undefined) => void;
  /** Restarts the wait with its own timeout, once the agent has been heard from. */
  rearm?: () => void;
};

export class Waits {
  private waiters: Waiter[] = [];
  private closeWaiters: Array<() => void> = [];
  /** Whether anything arrived on the connection yet. */
  private wasHeard = false;

  /** `received`: everything the case received so far; `startupMs`: how long the first reply may take; `timeout`: the timer (a test's own clock). */
  constructor(
    private readonly received: readonly Received[],
    private readonly startupMs: number,
    private readonly timeout: (ms: number, fire: () => void) => StallAwareTimeout = stallAwareTimeout,
  ) {}

  /** The first message at or after index `since` that matches `pred`, or undefined after `timeoutMs` or at the close. */
  message(pred: (r: Received) => boolean, timeoutMs: number, since: number, closed: boolean): Promise<Received | undefined> {
    const already = this.received.find((r) => r.index >= since && pred(r));
    if (already) return Promise.resolve(already);
    if (closed) return Promise.resolve(undefined);
    const own = timeoutMs;
    if (!this.wasHeard) timeoutMs = Math.max(timeoutMs, this.startupMs);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        pred,
        since,
        resolve: (r) => {
          timer.cancel();
          this.waiters = this.waiters.filter((w) => w !== waiter);
          resolve(r);
        },
        rearm: () => {
          if (own >= timer.remaining()) return;
          timer.cancel();
          timer = this.timeout(own, () => waiter.resolve(undefined));
        },
      };
      let timer = this.timeout(timeoutMs, () => waiter.resolve(undefined));
      this.waiters.push(waiter);
    });
  }

  /** Resolves with true at the close (at once when `closed`), or with false after `timeoutMs`. */
  closed(closed: boolean, timeoutMs: number): Promise<boolean> {
    if (closed) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const timer = this.timeout(timeoutMs, () => resolve(false));
      this.closeWaiters.push(() => {
        timer.cancel();
        resolve(true);
      });
    });
  }

  /** A frame arrived: the first one restarts every wait with its own timeout. */
  heard(): void {
    if (this.wasHeard) return;
    this.wasHeard = true;
    for (const w of this.waiters) w.rearm?.();
  }

  /** A message arrived: the waits it matches end with it. */
  arrived(rec: Received): void {
    for (const w of [...this.waiters]) if (rec.index >= w.since && w.pred(rec)) w.resolve(rec);
  }

  /** The connection closed: every wait ends. */
  ended(): void {
    for (const w of [...this.waiters]) w.resolve(undefined);
    for (const c of this.closeWaiters.splice(0)) c();
  }
}
