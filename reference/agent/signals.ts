/**
 * SIGTERM and SIGINT for the agents a process serves: one listener per signal for the whole
 * process, installed while at least one stopper is registered. A signal runs every stopper once
 * (a second signal starts nothing new) and the process exits with status 0 when they are done,
 * or when the longest grace period has run out (spec: shutdown#signals).
 */

/** Stops what a process serves; gets the signal's name. */
export type Stopper = (signal: NodeJS.Signals) => Promise<void>;

interface Registration {
  stop: Stopper;
  graceMs: number;
}

const SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];
const registered = new Set<Registration>();
let stopping: Promise<void> | undefined;

/** Exit a little after the grace period at the latest, so results and farewells sent at its end are flushed. */
const EXIT_ALLOWANCE_MS = 500;

function onSignal(signal: NodeJS.Signals): void {
  if (stopping) return;
  const all = [...registered];
  const grace = Math.max(0, ...all.map((r) => r.graceMs));
  setTimeout(() => process.exit(0), grace + EXIT_ALLOWANCE_MS).unref();
  stopping = Promise.allSettled(all.map((r) => r.stop(signal))).then(() => process.exit(0));
}

/**
 * Registers a stopper for SIGTERM and SIGINT; the returned function withdraws it (and the
 * process's listeners, once no stopper is left). Where there is no process, does nothing.
 */
export function stopOnSignals(stop: Stopper, graceMs: number): () => void {
  const proc = (globalThis as { process?: NodeJS.Process }).process;
  if (typeof proc?.on !== 'function') return () => {};
  const registration = { stop, graceMs };
  if (registered.size === 0) for (const s of SIGNALS) proc.on(s, onSignal);
  registered.add(registration);
  return () => {
    if (!registered.delete(registration) || registered.size > 0 || stopping) return;
    for (const s of SIGNALS) proc.off(s, onSignal);
  };
}
