/**
 * Heartbeats, on either side of a session: ping after heartbeat_ms without hearing from the
 * peer; any message is a sign of life; three unanswered pings in a row mean the peer is gone
 * (spec: limits#heartbeats). A message heard only notes the time: the one timer, when it fires,
 * waits on for what is left of the interval, so a busy session costs no timer per message.
 */
import type { Clock } from './platform.ts';

/** Unanswered pings after which the peer counts as gone. */
export const MISSED_PINGS_LIMIT = 3;

/** Watches one session's silence and pings into it. */
export class Liveness {
  private lastHeard: number;
  private missed = 0;
  private timer: unknown;
  private running = false;

  constructor(
    private readonly clock: Clock,
    private readonly heartbeatMs: number,
    private readonly ping: () => void,
    private readonly lost: () => void,
  ) {
    this.lastHeard = clock.now();
  }

  /** Starts watching. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.lastHeard = this.clock.now();
    this.schedule(this.heartbeatMs);
  }

  /** Records a sign of life: any message from the peer. */
  heard(): void {
    this.lastHeard = this.clock.now();
    this.missed = 0;
  }

  /** Stops watching. */
  stop(): void {
    this.running = false;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(ms: number): void {
    this.timer = this.clock.setTimeout(() => this.tick(), Math.max(1, ms));
  }

  private tick(): void {
    if (!this.running) return;
    const silent = this.clock.now() - this.lastHeard;
    if (silent < this.heartbeatMs) {
      this.schedule(this.heartbeatMs - silent);
      return;
    }
    if (this.missed >= MISSED_PINGS_LIMIT) {
      this.stop();
      this.lost();
      return;
    }
    this.missed++;
    this.ping();
    this.schedule(this.heartbeatMs);
  }
}
