/**
 * The wire transcript of a case: every frame sent and received, with time, direction and
 * connection, plus notes (connection opened or closed, process exit, agent stderr).
 */

/** Direction of a transcript entry: sent by the harness, received from the agent, a note, or a line of the agent's stderr. */
export type Direction = 'out' | 'in' | 'note' | 'stderr';

export interface WireEntry {
  /** Milliseconds since the case started. */
  t: number;
  /** Connection number within the case, from 1. */
  conn: number;
  dir: Direction;
  /** The frame as text (cut to TEXT_LIMIT characters), or the note. */
  text: string;
  /** The frame's length in bytes. */
  bytes?: number;
  /** The message type, when the frame decoded to a message. */
  type?: string;
  /** Problems found with this frame, each naming who is at fault. */
  flags?: string[];
}

/** Frames longer than this are cut in the transcript (the full length stays in `bytes`). */
export const TEXT_LIMIT = 4000;
/** At most this many stderr lines are kept per case. */
const STDERR_LIMIT = 200;

/** Cuts `text` to `limit` characters, saying how much was left out. */
export function cut(text: string, limit = TEXT_LIMIT): string {
  if (text.length <= limit) return text;
  return `${text.slice(0, limit)}… (${text.length - limit} more characters)`;
}

/** An append-only transcript with a shared clock. */
export class Transcript {
  readonly entries: WireEntry[] = [];
  private stderrCount = 0;

  constructor(private readonly startedAt: number = Date.now()) {}

  /** Milliseconds since the case started. */
  now(): number {
    return Date.now() - this.startedAt;
  }

  /** Appends an entry stamped with the current time; returns it so flags can be added. */
  add(entry: Omit<WireEntry, 't'>): WireEntry {
    const e: WireEntry = { t: this.now(), ...entry, text: cut(entry.text) };
    if (entry.dir === 'stderr') {
      if (++this.stderrCount > STDERR_LIMIT) return e;
    }
    this.entries.push(e);
    return e;
  }

  /** A note: something that is not a frame. */
  note(conn: number, text: string): void {
    this.add({ conn, dir: 'note', text });
  }

  /** The transcript as plain text lines, e.g. "  12 ms #1 → {…}". */
  render(limit = 400): string {
    const arrow: Record<Direction, string> = { out: '→', in: '←', note: '•', stderr: '!' };
    const shown = this.entries.length > limit ? this.entries.slice(-limit) : this.entries;
    const lines = shown.map((e) => {
      const flags = e.flags?.length ? `   [${e.flags.join('; ')}]` : '';
      return `${String(e.t).padStart(6)} ms #${e.conn} ${arrow[e.dir]} ${e.text}${flags}`;
    });
    if (shown.length < this.entries.length) lines.unshift(`(${this.entries.length - shown.length} earlier entries left out)`);
    return lines.join('\n');
  }
}
