/**
 * The duplicate table of one session: the message ids it received, each with its direct replies,
 * bounded by entries and by bytes (spec: idempotency#duplicate-table, limits#bounded-tables).
 */
import { OldestKey } from '../core/oldest.ts';

/**
 * A remembered reply: its text, or a way to rebuild that text byte for byte (a terminal task's
 * snapshot, whose result the task already holds) and what the rebuild costs to keep, or the
 * messages a quiet task's stream has sent so far, which stand for the reply its request never had
 * (spec: tasks#quiet-requests).
 */
export type Reply = string | { rebuild: () => string; bytes: number } | { replay: () => readonly string[]; bytes: number };

/** One message received: its direct replies and, for a handshake.init, its own text. */
export interface Remembered {
  replies: Reply[];
  /** The text of a handshake.init, so that only its byte-identical repeat counts as one (spec: idempotency#repeated-init). */
  request?: string;
}

/** What one entry costs besides its texts: the id, the map slot, the arrays. */
const ENTRY_OVERHEAD = 128;

/** The serialized texts of a remembered reply, in the order they are re-sent. */
export function replyTexts(reply: Reply): readonly string[] {
  if (typeof reply === 'string') return [reply];
  return 'rebuild' in reply ? [reply.rebuild()] : reply.replay();
}

/** The size of a remembered message in the table's accounting: UTF-16 code units of its texts, plus overhead. */
export function rememberedBytes(entry: Remembered): number {
  let n = ENTRY_OVERHEAD + (entry.request?.length ?? 0);
  for (const r of entry.replies) n += typeof r === 'string' ? r.length : r.bytes;
  return n;
}

/** One kept message: what it is remembered with, and what that costs in the table's accounting. */
interface Kept {
  entry: Remembered;
  bytes: number;
}

/**
 * Message ids and their replies, oldest forgotten first once there are more than `maxEntries`,
 * or more than `maxBytes` of them while more than `minEntries` are kept; the `minEntries` most
 * recent are never forgotten (spec: idempotency#duplicate-table).
 *
 * Every message a session receives is looked up here and then kept, and a table holds thousands:
 * each lookup of an id it does not hold is a walk through memory the caches no longer have. So the
 * id a lookup just missed is noted and its keeping skips a second lookup, unless the table changed
 * in between; and the oldest entry is forgotten through one iterator over the entries, which
 * carries its accounting, without looking it up again.
 */
export class DuplicateTable {
  private readonly map = new Map<string, Kept>();
  /** The oldest entry, with its accounting: OldestKey over the entries instead of the keys. */
  private readonly oldest = new OldestKey<[string, Kept]>({ keys: () => this.map.entries() });
  /** The id the last lookup did not find, while the table has not changed since. */
  private missed: string | undefined;
  private total = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxBytes: number,
    private readonly minEntries: number,
  ) {}

  get(messageId: string): Remembered | undefined {
    const kept = this.map.get(messageId);
    if (kept === undefined) this.missed = messageId;
    return kept?.entry;
  }

  set(messageId: string, entry: Remembered): void {
    if (messageId !== this.missed) this.delete(messageId);
    this.missed = undefined;
    const bytes = rememberedBytes(entry) + messageId.length;
    this.map.set(messageId, { entry, bytes });
    this.total += bytes;
    while (this.map.size > this.maxEntries || (this.total > this.maxBytes && this.map.size > this.minEntries)) {
      this.forgetOldest();
    }
  }

  entries(): IterableIterator<[string, Remembered]> {
    const it = this.map.entries();
    return (function* () {
      for (const [id, { entry }] of it) yield [id, entry] as [string, Remembered];
    })();
  }

  /** Entries held now. */
  get size(): number {
    return this.map.size;
  }

  /** Bytes held now, in the table's accounting. */
  get bytes(): number {
    return this.total;
  }

  private delete(messageId: string): void {
    const old = this.map.get(messageId);
    if (!old) return;
    this.map.delete(messageId);
    this.total -= old.bytes;
  }

  /** Forgets the oldest entry of a table that is not empty. */
  private forgetOldest(): void {
    const [id, kept] = this.oldest.take();
    this.map.delete(id);
    this.total -= kept.bytes;
  }
}

/**
 * The remembered replies of a message, from `own` (the connection's tables). A handshake.init that
 * resumes a session on a new connection, while this one carries none (`mayResume`), is looked up
 * in that session's table too, so that a replayed resume is a duplicate of the one that took
 * place and takes nothing over; only its byte-identical repeat counts (spec:
 * idempotency#duplicate-messages, resume#replayed-resume).
 */
export function rememberedReplies(
  own: (messageId: string) => Remembered | undefined,
  sessionTable: (sessionId: string) => DuplicateTable | undefined,
  msg: { type: string; message_id: string; payload?: unknown },
  text: string,
  mayResume: boolean,
): Remembered | undefined {
  const here = own(msg.message_id);
  if (here || msg.type !== 'handshake.init' || !mayResume) return here;
  const resume = (msg.payload as { resume?: { session_id?: unknown } } | undefined)?.resume;
  const there = typeof resume?.session_id === 'string' ? sessionTable(resume.session_id)?.get(msg.message_id) : undefined;
  return there?.request === text ? there : undefined;
}
