/**
 * Heartbeats: after heartbeat_ms without hearing from the peer the agent pings; any message
 * counts as a sign of life; three unanswered pings in a row mean the peer is gone
 * (spec: limits#heartbeats).
 */
import type { Clock, LogLevel, TimerHandle } from '../core/platform.ts';
import { isPeerGone } from '../transports/writer.ts';

/** Unanswered pings after which the peer counts as gone. */
export const MISSED_PINGS = 3;

/**
 * Watches one connection's silence. A message heard only notes the time: the one timer, when it
 * fires, waits on for what is left of the interval since then, so a busy connection costs no
 * timer per message.
 */
export class Liveness {
  private missed = 0;
  private timer?: TimerHandle;
  private stopped = false;
  private lastHeard: number;

  constructor(
    private readonly clock: Clock,
    private readonly intervalMs: number,
    private readonly ping: () => void,
    private readonly gone: () => void,
  ) {
    this.lastHeard = clock.now();
    this.arm(intervalMs);
  }

  /** Something arrived from the peer: it is alive. */
  heard(): void {
    if (this.stopped) return;
    this.missed = 0;
    this.lastHeard = this.clock.now();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(ms: number): void {
    this.timer = this.clock.setTimeout(() => this.tick(), ms);
  }

  private tick(): void {
    this.timer = undefined;
    if (this.stopped) return;
    // Heard from since the last ping (or the start): silent for less than the interval so far.
    const silent = this.clock.now() - this.lastHeard;
    if (this.missed === 0 && silent < this.intervalMs) return this.arm(this.intervalMs - silent);
    if (this.missed >= MISSED_PINGS) {
      this.stop();
      this.gone();
      return;
    }
    this.missed++;
    this.ping();
    this.arm(this.intervalMs);
  }
}

/** A connection's timers: each handshake step's timeout, then the heartbeats of its session (spec: handshake#timeouts). */
export class ConnectionTimers {
  private step?: TimerHandle;
  private liveness?: Liveness;

  constructor(private readonly clock: Clock) {}

  /** (Re)starts the timeout of a handshake step. */
  armStep(ms: number, onTimeout: () => void): void {
    this.stopStep();
    this.step = this.clock.setTimeout(() => {
      this.step = undefined;
      onTimeout();
    }, ms);
  }

  stopStep(): void {
    if (this.step !== undefined) this.clock.clearTimeout(this.step);
    this.step = undefined;
  }

  /** The session is established: heartbeats from now on. */
  live(intervalMs: number, ping: () => void, gone: () => void): void {
    this.liveness = new Liveness(this.clock, intervalMs, ping, gone);
  }

  /** Something arrived from the peer. */
  heard(): void {
    this.liveness?.heard();
  }

  stop(): void {
    this.stopStep();
    this.liveness?.stop();
  }
}

/**
 * The log line of a transport error (`what`: where it came from): a peer that went away mid-write
 * (EPIPE, ECONNRESET) is the close that follows, said at `gone` (info); anything else is a warning.
 */
export function transportTrouble(what: string, err: Error, gone: LogLevel = 'info'): [LogLevel, string] {
  return isPeerGone(err) ? [gone, `${what}: the peer went away (${err.message})`] : ['warn', `${what}: ${err.message}`];
}
