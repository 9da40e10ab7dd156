import type { InboundFrame } from './transport.ts';
import { DEFAULT_MAX_FRAME_BYTES, checkMaxFrameBytes } from './frame.ts';

const LF = 0x0a;
const CR = 0x0d;

/** True for the bytes JSON counts as whitespace: space, tab, CR, LF. */
function isBlankByte(b: number): boolean {
  return b === 0x20 || b === 0x09 || b === CR || b === LF;
}

/** True if `bytes[from, to)` holds only JSON whitespace. */
function allBlank(bytes: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (!isBlankByte(bytes[i])) return false;
  return true;
}

/** Throws if `text` would split into two newline-delimited frames. */
export function checkOneLine(text: string): void {
  if (text.includes('\n')) throw new TypeError('a stdio frame cannot contain a line feed');
}

/** Copies `bytes[from, to)` (Buffer#slice would return a view). */
function copyOf(bytes: Uint8Array, from: number, to: number): Uint8Array {
  return new Uint8Array(bytes.subarray(from, to));
}

/**
 * A bounded reader for newline-delimited frames (spec: bindings#stdio).
 *
 * Splits on LF and strips one CR before it; skips lines holding only whitespace;
 * buffers at most `maxFrameBytes + 1` bytes of a line, discards the rest up to the next
 * LF while counting it, and then emits one frame with `oversized: true`
 * (spec: limits#bounded-reading). Work is linear in the input: a line that spans chunks is
 * joined once, at its end, and a line within one chunk is a zero-copy view of it, so a
 * chunk must not be reused after it was pushed.
 */
export class LineReader {
  private max: number;
  /** Pieces of the current line held so far; their total is at most `max + 1` bytes. */
  private pieces: Uint8Array[] = [];
  private held = 0;
  /** Bytes of the current line seen so far, including discarded ones. */
  private seen = 0;
  /** The last byte of the current line seen so far, to strip a CR that precedes LF. */
  private lastByte = -1;
  /** Whether every byte of the current line seen so far is whitespace. */
  private blank = true;
  private ended = false;

  /** Creates a reader that hands each complete line to `onFrame`. */
  constructor(
    private readonly onFrame: (frame: InboundFrame) => void,
    maxFrameBytes: number = DEFAULT_MAX_FRAME_BYTES,
  ) {
    this.max = checkMaxFrameBytes(maxFrameBytes);
  }

  /** The current limit; a line longer than this is emitted as oversized. */
  get maxFrameBytes(): number {
    return this.max;
  }

  /** Changes the limit; it applies to every line not yet emitted, including one in progress. */
  setMaxFrameBytes(n: number): void {
    this.max = checkMaxFrameBytes(n);
  }

  /** Feeds bytes in; emits one frame per complete line found. */
  push(chunk: Uint8Array): void {
    if (this.ended) throw new Error('LineReader: push after end');
    let start = 0;
    while (start < chunk.byteLength) {
      const nl = chunk.indexOf(LF, start);
      const stop = nl === -1 ? chunk.byteLength : nl;
      if (nl !== -1 && this.seen === 0) {
        // Fast path: the whole line lies inside this chunk.
        this.emitWhole(chunk, start, stop);
      } else {
        this.take(chunk, start, stop);
        if (nl !== -1) this.finishLine();
      }
      if (nl === -1) break;
      start = nl + 1;
    }
  }

  /** Flushes a final line that had no terminator; further pushes throw. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.seen > 0) this.finishLine();
  }

  /** Emits a line that lies entirely in `chunk[from, to)` without copying it. */
  private emitWhole(chunk: Uint8Array, from: number, to: number): void {
    let end = to;
    if (end > from && chunk[end - 1] === CR) end--;
    const length = end - from;
    if (length === 0 || (isBlankByte(chunk[from]) && allBlank(chunk, from, end))) return;
    if (length > this.max) {
      this.onFrame({
        bytes: copyOf(chunk, from, from + this.max + 1),
        oversized: true,
        byteLength: length,
      });
      return;
    }
    this.onFrame({ bytes: chunk.subarray(from, end), oversized: false, byteLength: length });
  }

  /** Adds `chunk[from, to)` to the current line, keeping at most `max + 1` bytes. */
  private take(chunk: Uint8Array, from: number, to: number): void {
    if (to <= from) return;
    const room = this.max + 1 - this.held;
    const kept = Math.min(room, to - from);
    if (kept > 0) {
      // A copy, so that a long line does not keep every chunk it touched alive.
      this.pieces.push(copyOf(chunk, from, from + kept));
      this.held += kept;
    }
    if (this.blank) this.blank = allBlank(chunk, from, to);
    this.seen += to - from;
    this.lastByte = chunk[to - 1];
  }

  /** Emits the current line (unless blank) and resets for the next one. */
  private finishLine(): void {
    const length = this.lastByte === CR ? this.seen - 1 : this.seen;
    const blank = this.blank;
    const bytes = this.joinPieces();
    this.pieces = [];
    this.held = 0;
    this.seen = 0;
    this.lastByte = -1;
    this.blank = true;
    if (length === 0 || blank) return;
    if (length > this.max) {
      const prefix = bytes.byteLength > this.max + 1 ? bytes.subarray(0, this.max + 1) : bytes;
      this.onFrame({ bytes: prefix, oversized: true, byteLength: length });
      return;
    }
    this.onFrame({ bytes: bytes.subarray(0, length), oversized: false, byteLength: length });
  }

  /** Joins the held pieces into one array, copying only when there is more than one. */
  private joinPieces(): Uint8Array {
    if (this.pieces.length === 1) return this.pieces[0];
    const out = new Uint8Array(this.held);
    let at = 0;
    for (const piece of this.pieces) {
      out.set(piece, at);
      at += piece.byteLength;
    }
    return out;
  }
}
