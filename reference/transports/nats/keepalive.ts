/**
 * The keepalives of a NATS connection: how often each side sends one, the range either side may
 * announce in `Tap-Keepalive-Ms`, and how many may be missed (spec: bindings-nats#liveness).
 */
import { frozenFor } from '../../core/frozen.ts';

/** How often each side sends a keepalive unless told otherwise, in ms (spec: bindings-nats#liveness). */
export const DEFAULT_KEEPALIVE_MS = 1000;

/** How many of the peer's keepalive intervals may pass in silence before the transport counts as lost. */
export const MISSED_KEEPALIVES = 3;

/** The range of `Tap-Keepalive-Ms` either side may announce, in ms (spec: bindings-nats#liveness). */
export const MIN_KEEPALIVE_MS = 100;
export const MAX_KEEPALIVE_MS = 60_000;

/**
 * The keepalive interval a `Tap-Keepalive-Ms` header announces, or undefined when it is not a
 * whole number of milliseconds from MIN_KEEPALIVE_MS to MAX_KEEPALIVE_MS (spec: bindings-nats#liveness).
 */
export function parseKeepalive(header: string | undefined): number | undefined {
  if (header === undefined || !/^[0-9]{1,6}$/.test(header)) return undefined;
  const ms = Number(header);
  return ms >= MIN_KEEPALIVE_MS && ms <= MAX_KEEPALIVE_MS ? ms : undefined;
}

/** `ms` brought into the keepalive range, so that no timer derived from it can overflow. */
export function clampKeepalive(ms: number): number {
  return Number.isFinite(ms) ? Math.min(MAX_KEEPALIVE_MS, Math.max(MIN_KEEPALIVE_MS, ms)) : DEFAULT_KEEPALIVE_MS;
}

/** Throws when `ms` is outside the range a side may announce: an option given in code, not a peer's header. */
export function checkKeepalive(ms: number): void {
  if (parseKeepalive(String(ms)) === undefined)
    throw new RangeError(`keepaliveMs ${ms} is outside ${MIN_KEEPALIVE_MS}–${MAX_KEEPALIVE_MS} ms (spec: bindings-nats#liveness)`);
}

/**
 * The peer's silence on one connection, counted lost past `silenceMs` (spec: bindings-nats#liveness).
 * Time in which this process could not run is not the peer's silence: what the peer sent meanwhile
 * waits unread. So a check that runs later than due by more than the slack (core/frozen.ts) adds
 * that time to the last hearing; a peer that is gone is then counted lost that much later, never
 * sooner.
 */
export class SilenceWatch {
  /** How often `check` is to run, in ms. */
  readonly everyMs: number;
  private heardAt: number;
  private checkedAt: number;

  constructor(
    readonly silenceMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.everyMs = Math.max(50, Math.floor(silenceMs / 6));
    this.heardAt = this.checkedAt = now();
  }

  /** The peer was heard from now. */
  heard(): void {
    this.heardAt = this.now();
  }

  /** One check, run every `everyMs`: true once the peer has been silent longer than `silenceMs`. */
  check(): boolean {
    const now = this.now();
    this.heardAt += frozenFor(this.checkedAt, this.everyMs, now);
    this.checkedAt = now;
    return now - this.heardAt > this.silenceMs;
  }
}
