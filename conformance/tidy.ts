/**
 * What a profile's cases put on the agent's server, removed once every case of a run has ended:
 * a profile keeps a Tidy in the run's shared scenarios (`RunEnv.shared`) under a key that starts
 * with TIDY_KEY, and the runner calls it after the last case, printing what it says.
 */

/** Removes what a profile's cases left, and resolves with lines for the person running the suite: what went, what stays and why. */
export interface Tidy {
  tidy(): Promise<string[]>;
}

/** The prefix of the keys of `RunEnv.shared` whose values are a Tidy. */
export const TIDY_KEY = 'tidy:';

/** Runs every Tidy of one repetition's shared scenarios, in turn, and logs its lines. */
export async function tidyShared(shared: Map<string, Promise<unknown>>, log: ((line: string) => void) | undefined): Promise<void> {
  for (const [key, value] of shared) {
    if (!key.startsWith(TIDY_KEY)) continue;
    const lines = await (value as Promise<Tidy>)
      .then((t) => t.tidy())
      .catch((err: Error) => [`could not remove what the run's cases left on the agent's server: ${err.message}`]);
    for (const line of lines) log?.(`tap-conform: ${line}`);
  }
}
