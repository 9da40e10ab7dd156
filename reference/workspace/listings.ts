/**
 * The record names a workspace agent's scans work through: one listing of `pending/` or
 * `awaiting/` serves a whole backlog instead of one listing a task (spec: bindings-workspace#directories).
 */
import { parseRecordName } from './layout.ts';

type Dir = 'pending' | 'awaiting';

/** A listing being worked through: record names from a random one on, the next to try, when it was made, and whether a scan has taken it in yet. */
export interface Listing {
  names: string[];
  next: number;
  at: number;
  fresh: boolean;
}

export class Listings {
  private readonly last = new Map<Dir, Listing>();
  private readonly watched = new Set<Dir>();
  private readonly dirty = new Set<Dir>();

  /** `list` reads a directory's names; a listing serves at most `maxAgeMs`. */
  constructor(
    private readonly list: (dir: Dir) => Promise<string[]>,
    private readonly maxAgeMs: number,
  ) {}

  /** A watch of `dir` started (true) or failed (false): without one, every scan of an emptied listing lists again. */
  watching(dir: Dir, on: boolean): void {
    if (on) this.watched.add(dir);
    else this.watched.delete(dir);
  }

  /** The watch saw `dir` change. */
  changed(dir: Dir): void {
    this.dirty.add(dir);
  }

  /**
   * The names of `dir` still to try: what the last listing left while it is younger than
   * `maxAgeMs` (an empty rest too, while the watch saw no change); else a fresh listing, starting
   * at a random place so that agents racing for the same files spread out.
   */
  namesToTry(dir: Dir): Promise<Listing> | Listing {
    const last = this.last.get(dir);
    const unchanged = this.watched.has(dir) && !this.dirty.has(dir);
    if (last && (last.next < last.names.length || unchanged) && Date.now() - last.at < this.maxAgeMs) return last;
    this.dirty.delete(dir);
    return this.list(dir).then((all) => {
      const names = all.filter((n) => parseRecordName(n) !== null).sort();
      const start = names.length > 0 ? Math.floor(Math.random() * names.length) : 0;
      const listing = { names: [...names.slice(start), ...names.slice(0, start)], next: 0, at: Date.now(), fresh: true };
      this.last.set(dir, listing);
      return listing;
    });
  }
}
