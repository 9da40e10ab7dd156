/**
 * The peer's numbering of a NATS connection: each message takes the next `Tap-Seq`; a number a
 * refused (forged) frame carried may be skipped by the next authentic message, and no other gap
 * is allowed (spec: bindings-nats#frames, bindings-nats#forged-frames).
 */

/** How far above the last number taken the numbers of refused frames are remembered. */
const MAX_UNPROVEN = 64;

export class PeerNumbering {
  private heard = 0;
  /** Numbers above `heard` that refused frames carried. */
  private readonly unproven = new Set<number>();

  /** The last number taken. */
  get last(): number {
    return this.heard;
  }

  /** A frame refused by the screen carried `seq`: a later message may skip it. */
  refused(seq: number): void {
    if (Number.isSafeInteger(seq) && seq > this.heard && seq <= this.heard + MAX_UNPROVEN) this.unproven.add(seq);
  }

  /** Takes `seq` when it is the next number or skips only refused ones; false for any other. */
  take(seq: number): boolean {
    const skipped = seq - this.heard - 1;
    let follows = Number.isSafeInteger(seq) && skipped >= 0 && skipped <= this.unproven.size;
    for (let n = this.heard + 1; follows && n < seq; n++) follows = this.unproven.has(n);
    if (!follows) return false;
    for (const n of this.unproven) if (n <= seq) this.unproven.delete(n);
    this.heard = seq;
    return true;
  }
}

/** What a transport saw of the peer's numbering and keepalives (spec: bindings-nats#frames, bindings-nats#liveness). */
export interface NatsInboundLog {
  /** The peer's messages received so far, frames and controls. */
  messages: number;
  /** The peer's keepalives received so far. */
  keepalives: number;
  /** When the newest keepalives arrived (ms since the epoch), at most the last 64. */
  keepaliveTimes: number[];
  /** Frames that arrived in more than one piece. */
  joinedFrames: number;
}
