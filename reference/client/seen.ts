/** A bounded set of message ids: the duplicate table of one session (spec: sessions#duplicates). */

/** The default number of message ids remembered per session. */
export const DEFAULT_SEEN_LIMIT = 16384;

/** Remembers the latest `limit` ids; the oldest are forgotten first. */
export class SeenIds {
  private readonly ids = new Set<string>();

  constructor(private readonly limit = DEFAULT_SEEN_LIMIT) {}

  has(id: string): boolean {
    return this.ids.has(id);
  }

  add(id: string): void {
    this.ids.add(id);
    if (this.ids.size > this.limit) this.ids.delete(this.ids.values().next().value as string);
  }

  clear(): void {
    this.ids.clear();
  }
}
