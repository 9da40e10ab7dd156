/**
 * Work deferred in batches: what is queued before the scheduled task runs shares it. A microtask
 * of Node costs an async resource of its own, and a burst of input queues many calls.
 */

/**
 * Returns `later(fn)`: `fn` runs in a task of `schedule` (default a microtask) after the current
 * work, in the order queued, with every other call queued before that task ran. A call that throws
 * is passed to `report`, and the calls after it still run.
 */
export function batches(report: (err: unknown) => void, schedule: (task: () => void) => void = queueMicrotask): (fn: () => void) => void {
  let queued: Array<() => void> = [];
  const run = (): void => {
    const calls = queued;
    queued = [];
    for (const call of calls) {
      try {
        call();
      } catch (err) {
        report(err);
      }
    }
  };
  return (fn) => {
    if (queued.push(fn) === 1) schedule(run);
  };
}
