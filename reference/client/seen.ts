/** A bounded set of message ids: the duplicate table of one session (spec: sessions#duplicates). */
import { OldestKey } from '../core/oldest.ts';

/** The default number of message ids remembered per session. */
export const DEFAULT_SEEN_LIMIT = 16384;

/** Remembers the latest `limit` ids; the oldest are forgotten first. */
export class SeenIds {
  private readonly ids = new Set<string>();
  private readonly oldest = new OldestKey(this.ids);

  constructor(private readonly limit = DEFAULT_SEEN_LIMIT) {}

  has(id: string): boolean {
    return this.ids.has(id);
  }

  add(id: string): void {
    this.ids.add(id);
    if (this.ids.size > this.limit) this.ids.delete(this.oldest.take());
  }

  clear(): void {
    this.ids.clear();
  }
}
