/**
 * Time in which a process could not run. A host that gives a virtual machine no CPU stops every
 * process of it alike, and an event loop held by other work stops one: a timer that comes far
 * later than asked says so. Such time is no one's silence and no one's lateness, so the waits and
 * watches that judge a peer by time leave it out (a NATS connection's silence watch, tap-conform's
 * waits).
 */

/** How much later than asked a timer may come before the excess counts as time frozen, in ms. */
export const FROZEN_SLACK_MS = 250;

/** The part of a pause begun at `before` for `askedMs`, and ended at `now`, that counts as time frozen, in ms. */
export function frozenFor(before: number, askedMs: number, now: number): number {
  return Math.max(0, now - before - askedMs - FROZEN_SLACK_MS);
}
