/**
 * The injected platform, types only: time and timers, log lines, random bytes and HMAC. The
 * agent runtime and the client take these as options, so the core stays pure and tests can
 * drive time (spec: tap-1-0#abstract).
 */
export type { RandomSource } from './ids.ts';
export type { Hmac } from './signing.ts';

/** A timer handle as returned by `Clock.setTimeout`. */
export type TimerHandle = unknown;

/** Time as a peer sees it: every timestamp, deadline and timer goes through here. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `fn` after `ms` milliseconds; returns a handle for `clearTimeout`. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer made by `setTimeout`. */
  clearTimeout(handle: TimerHandle): void;
}

/** How serious a log line is. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/**
 * A log line writer, with optional structured fields; never stdout, which may carry only TAP
 * messages (spec: bindings#stdio).
 */
export type Logger = (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;

/** Throws a TypeError naming `caller` when a `logger` option is given but is no function: it would fail only when first called. */
export function checkLogger(logger: unknown, caller: string): void {
  if (logger !== undefined && typeof logger !== 'function')
    throw new TypeError(`${caller}: options.logger must be a function (level, message, fields?) => void`);
}
