/**
 * A connection's timers on the agent's side: each handshake step's timeout, then the heartbeats
 * of its session (core/liveness.ts; spec: limits#heartbeats); and how a transport error is logged.
 */
import { failureText } from '../core/errors.ts';
import { Liveness } from '../core/liveness.ts';
import type { Clock, LogLevel, TimerHandle } from '../core/platform.ts';
import { isPeerGone } from '../transports/writer.ts';

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
    this.liveness.start();
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
 * A transport of someone else's may fail with anything, an Error or not.
 */
export function transportTrouble(what: string, err: unknown, gone: LogLevel = 'info'): [LogLevel, string] {
  const said = failureText(err);
  return isPeerGone(err) ? [gone, `${what}: the peer went away (${said})`] : ['warn', `${what}: ${said}`];
}
