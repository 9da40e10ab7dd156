/** A small typed event emitter that never throws for want of a listener. */

type Listener<A> = (arg: A) => void;

/** Subscribes listeners to named events; a listener that throws is isolated from the others. */
export class Emitter<Events extends Record<string, unknown>> {
  private readonly listeners = new Map<keyof Events, Set<Listener<never>>>();

  /** Adds `fn` for `event`; returns a function that removes it. */
  on<K extends keyof Events>(event: K, fn: Listener<Events[K]>): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(fn as Listener<never>);
    return () => this.off(event, fn);
  }

  /** Adds `fn` for the next `event` only. */
  once<K extends keyof Events>(event: K, fn: Listener<Events[K]>): () => void {
    const off = this.on(event, (arg) => {
      off();
      fn(arg);
    });
    return off;
  }

  /** Removes `fn` from `event`. */
  off<K extends keyof Events>(event: K, fn: Listener<Events[K]>): void {
    this.listeners.get(event)?.delete(fn as Listener<never>);
  }

  /** Calls every listener of `event` with `arg`; returns whether there was one. */
  protected emit<K extends keyof Events>(event: K, arg: Events[K]): boolean {
    const set = this.listeners.get(event);
    if (!set || set.size === 0) return false;
    for (const fn of [...set]) {
      try {
        (fn as Listener<Events[K]>)(arg);
      } catch {
        // A listener's failure is its own; the session goes on.
      }
    }
    return true;
  }
}
