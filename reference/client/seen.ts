/** A bounded set of message ids: the duplicate table of one session (spec: idempotency#duplicate-messages). */
import { OldestKey } from '../core/oldest.ts';

/** The default number of message ids remembered per session. */
export const DEFAULT_SEEN_LIMIT = 16384;

/** The most ids of other forms that may come before the first numbered one for the window to be taken. */
const ADOPT_AFTER_AT_MOST = 64;

/** The most characters a numbered id's counter may have: 36^10 is a safe integer. */
const MAX_COUNTER_CHARS = 10;

/**
 * Remembers the latest `limit` ids; the oldest are forgotten first.
 *
 * A sender that numbers its messages `<prefix>.<counter>`, one prefix a session and the counter
 * in base 36 or 10 (as the reference does after the handshake), has those ids kept by their
 * counter in a window over the latest counters, found without hashing a string; an id of any
 * other form, or of another prefix, is kept in a set. Each id has one form, so each is looked for
 * where it was put. An id leaves the window only once `limit` ids were added after it; a sender
 * whose counters are too sparse for a window of `limit` slots moves every id to the set, and the
 * session goes on with the set alone.
 */
export class SeenIds {
  private readonly ids = new Set<string>();
  private readonly oldest = new OldestKey(this.ids);
  /** The window of the session's numbered ids, with their prefix; undefined before the first and once given up. */
  private window: CounterWindow | undefined;
  /** Ids added so far. */
  private added = 0;
  /** Whether the first numbered id was met, and the window taken or not. */
  private decided = false;

  constructor(private readonly limit = DEFAULT_SEEN_LIMIT) {}

  has(id: string): boolean {
    const n = this.counterOf(id);
    return n < 0 ? this.ids.has(id) : this.window!.has(n);
  }

  add(id: string): void {
    this.added++;
    if (!this.decided && counterAfterDot(id) >= 0) this.adoptPrefix(id.slice(0, id.lastIndexOf('.')));
    const n = this.counterOf(id);
    if (n >= 0 && this.window!.add(n, this.added)) return;
    if (n >= 0) this.giveUpWindow();
    this.ids.add(id);
    this.trimSet();
  }

  /** The slots of the counter window: 0 while ids are kept in the set alone (for tests and diagnostics). */
  get windowSlots(): number {
    return this.window?.slots ?? 0;
  }

  clear(): void {
    this.ids.clear();
    this.window = undefined;
    this.added = 0;
    this.decided = false;
  }

  /**
   * At the first numbered id: its prefix is the session's, unless a numbered id of that prefix is in the
   * set already (a few ids of other forms, such as a handshake's, may come first) — then the
   * session keeps the set alone.
   */
  private adoptPrefix(prefix: string): void {
    this.decided = true;
    if (this.ids.size > ADOPT_AFTER_AT_MOST) return;
    for (const id of this.ids) if (counterUnder(id, prefix) >= 0) return;
    this.window = new CounterWindow(prefix, this.limit);
  }

  /** The counter of an id `<prefix>.<counter>` of the session's prefix while the window is kept, else -1. */
  private counterOf(id: string): number {
    return this.window === undefined ? -1 : counterUnder(id, this.window.prefix);
  }

  /** Moves the window's ids to the set, oldest first, and keeps every later id there. */
  private giveUpWindow(): void {
    const { prefix } = this.window!;
    for (const n of this.window!.byAge()) this.ids.add(`${prefix}.${n.toString(36)}`);
    this.window = undefined;
    this.trimSet();
  }

  /** Forgets the set's oldest ids beyond the limit. */
  private trimSet(): void {
    while (this.ids.size > this.limit) this.ids.delete(this.oldest.take());
  }
}

/** The counter of an id `<prefix>.<counter>`, or -1 for an id of another prefix or form. */
function counterUnder(id: string, prefix: string): number {
  if (id.length <= prefix.length + 1 || id.charCodeAt(prefix.length) !== 46 || !id.startsWith(prefix)) return -1;
  return counterAfterDot(id, prefix.length);
}

/**
 * The counter written after the dot at `dot` (default: the last dot) when it is written plainly
 * in base 36 — [0-9a-z], no leading zero, at most MAX_COUNTER_CHARS — else -1. Each counter has
 * one such form, so two ids of one prefix are equal exactly when their counters are.
 */
export function counterAfterDot(id: string, dot = id.lastIndexOf('.')): number {
  const from = dot + 1;
  const chars = id.length - from;
  if (dot <= 0 || chars < 1 || chars > MAX_COUNTER_CHARS || (chars > 1 && id.charCodeAt(from) === 48)) return -1;
  let n = 0;
  for (let i = from; i < id.length; i++) {
    const c = id.charCodeAt(i);
    const d = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 122 ? c - 87 : -1;
    if (d < 0) return -1;
    n = n * 36 + d;
  }
  return n;
}

/** The slots a window starts with; it doubles as a sender's counters spread, up to its limit. */
const FIRST_SLOTS = 256;

/**
 * The counters added among the latest ones (by value, up to the highest added), in a ring of
 * slots that each hold when its counter was added (its place among all ids, from 1; 0 for none).
 * The ring starts small and doubles, up to `limit` slots, rather than forget an id fewer than
 * `limit` ids old: a session that sees few messages keeps a small one.
 */
class CounterWindow {
  private added: Float64Array;
  private size: number;
  /** The highest counter added; -1 before any. */
  private top = -1;

  constructor(
    readonly prefix: string,
    private readonly limit: number,
  ) {
    this.size = Math.max(1, Math.min(FIRST_SLOTS, limit));
    this.added = new Float64Array(this.size);
  }

  get slots(): number {
    return this.size;
  }

  /** The lowest counter the window can hold now. */
  private get bottom(): number {
    return Math.max(0, this.top - this.size + 1);
  }

  has(n: number): boolean {
    return n <= this.top && n > this.top - this.size && this.added[n % this.size] !== 0;
  }

  /**
   * Adds counter `n` as the `order`th id. False, and nothing changed, when that would push out an
   * id fewer than `limit` ids old even at `limit` slots, or `n` lies below the window: the caller
   * keeps them otherwise.
   */
  add(n: number, order: number): boolean {
    if (n > this.top) {
      while (!this.mayMoveTo(n, order)) {
        if (this.size >= this.limit) return false;
        this.grow();
      }
      if (n - this.top >= this.size) this.added.fill(0);
      else for (let m = this.top + 1; m <= n; m++) this.added[m % this.size] = 0;
      this.top = n;
    } else if (n <= this.top - this.size) return false;
    this.added[n % this.size] = order;
    return true;
  }

  /** The counters held, the one added first first. */
  byAge(): number[] {
    const held: number[] = [];
    for (let m = this.bottom; m <= this.top; m++) if (this.added[m % this.size] !== 0) held.push(m);
    return held.sort((a, b) => this.added[a % this.size]! - this.added[b % this.size]!);
  }

  /** True when every counter the window would leave behind, moving its top to `n`, is absent or at least `limit` ids older than the `order`th. */
  private mayMoveTo(n: number, order: number): boolean {
    for (let m = this.bottom; m <= Math.min(this.top, n - this.size); m++) {
      const at = this.added[m % this.size]!;
      if (at !== 0 && order - at < this.limit) return false;
    }
    return true;
  }

  /** Doubles the ring (at most to `limit` slots), each counter held moved to its new slot. */
  private grow(): void {
    const size = Math.min(this.size * 2, this.limit);
    const added = new Float64Array(size);
    for (let m = this.bottom; m <= this.top; m++) added[m % size] = this.added[m % this.size]!;
    this.added = added;
    this.size = size;
  }
}
