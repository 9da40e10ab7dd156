import { HANDED_OVER, type CloseInfo, type InboundFrame, type RawSendOptions, type RawTransport } from './transport.ts';
import { DEFAULT_MAX_FRAME_BYTES, checkMaxFrameBytes, frameOf } from './frame.ts';
import { fitsUtf8, utf8ByteLength } from '../core/decode.ts';
import { isWellFormed } from '../core/jcs.ts';
import { batches } from '../core/batches.ts';

/** Options for `createMemoryPair`. */
export interface MemoryPairOptions {
  /** The initial frame limit of both ends (default 16 MiB). */
  maxFrameBytes?: number;
  /** How a delivery is deferred (default `queueMicrotask`; `setImmediate` lets I/O interleave). */
  schedule?: (task: () => void) => void;
}

type Entry = { frame: InboundFrame } | { close: CloseInfo };

const encoder = new TextEncoder();

/**
 * A frame sent as a string and received within its limit: it hands its text on as it is, and makes
 * its UTF-8 bytes (and counts them) only for a reader that asks. Only a well-formed string is
 * carried so: a lone surrogate becomes U+FFFD in UTF-8, and its frame is encoded at once.
 */
class TextFrame implements InboundFrame {
  readonly oversized = false;
  private encoded?: Uint8Array;
  private length?: number;

  constructor(readonly text: string) {}

  get bytes(): Uint8Array {
    return (this.encoded ??= encoder.encode(this.text));
  }

  get byteLength(): number {
    return (this.length ??= this.encoded?.byteLength ?? utf8ByteLength(this.text));
  }
}

/** One end of an in-memory linked pair; `sendRaw` injects arbitrary bytes into the peer. */
export class MemoryTransport implements RawTransport {
  onmessage?: (frame: InboundFrame) => void;
  onclose?: (info: CloseInfo) => void;
  onerror?: (err: Error) => void;

  /** The other end; set by `createMemoryPair`. */
  peer!: MemoryTransport;
  private max: number;
  private started = false;
  private closed = false;
  private closeQueued = false;
  private readonly inbox: Entry[] = [];
  /** Delivers to the peer in batches: the frames sent before a delivery runs go in one scheduled task. */
  private readonly later: (delivery: () => void) => void;
  private head = 0;
  private draining = false;
  private closeDone = false;
  private readonly closeWaiters: Array<() => void> = [];

  /** Creates an unlinked end; use `createMemoryPair` instead. */
  constructor(
    maxFrameBytes: number,
    private readonly schedule: (task: () => void) => void,
  ) {
    this.max = checkMaxFrameBytes(maxFrameBytes);
    this.later = batches((err) => this.report(err), schedule);
  }

  /** Begins delivering frames, including those that arrived before. */
  async start(): Promise<void> {
    this.started = true;
    this.schedule(() => this.drain());
  }

  /** Delivers `text` as UTF-8 to the peer, asynchronously and in order; the peer reads it as text when it fits. */
  send(text: string): Promise<void> {
    const asText = isWellFormed(text);
    this.deliver((max) => (asText && fitsUtf8(text, max) ? new TextFrame(text) : frameOf(encoder.encode(text), max)));
    return HANDED_OVER;
  }

  /** Delivers a copy of `data` to the peer as one frame, flagged binary if asked. */
  async sendRaw(data: Uint8Array, options: RawSendOptions = {}): Promise<void> {
    const bytes = new Uint8Array(data);
    const binary = options.binary === true ? true : undefined;
    this.deliver((max) => frameOf(bytes, max, binary));
  }

  /** Closes both ends; each `onclose` gets `info` after the frames sent before it. */
  close(info: CloseInfo = { code: 1000 }): Promise<void> {
    const done = this.closeDone ? Promise.resolve() : new Promise<void>((resolve) => this.closeWaiters.push(resolve));
    if (!this.closed) {
      this.closed = true;
      this.peer.closed = true;
      this.schedule(() => {
        this.enqueue({ close: info });
        this.peer.enqueue({ close: info });
      });
    }
    return done;
  }

  /** Sets the limit this end applies to frames it receives. */
  setMaxFrameBytes(n: number): void {
    this.max = checkMaxFrameBytes(n);
  }

  /** Hands the peer the frame `frameFor` makes under the peer's limit at delivery, asynchronously and in order. */
  private deliver(frameFor: (max: number) => InboundFrame): void {
    if (this.closed) return;
    const peer = this.peer;
    this.later(() => peer.enqueue({ frame: frameFor(peer.max) }));
  }

  private enqueue(entry: Entry): void {
    if (this.closeQueued) return;
    if ('close' in entry) this.closeQueued = true;
    this.inbox.push(entry);
    this.drain();
  }

  /** Passes a handler's exception to `onerror`, or rethrows it outside the delivery loop. */
  private report(err: unknown): void {
    const error = err instanceof Error ? err : new Error(String(err));
    if (this.onerror) this.onerror(error);
    else
      queueMicrotask(() => {
        throw error;
      });
  }

  /** Hands queued entries out in order; a close forces delivery even if never started. */
  private drain(): void {
    if (this.draining || !(this.started || this.closeQueued)) return;
    this.draining = true;
    try {
      while (this.head < this.inbox.length) {
        const entry = this.inbox[this.head++];
        try {
          if ('frame' in entry) this.onmessage?.(entry.frame);
          else this.onclose?.(entry.close);
        } catch (err) {
          this.report(err);
        }
        if ('close' in entry) {
          this.closeDone = true;
          for (const resolve of this.closeWaiters.splice(0)) resolve();
        }
      }
      this.inbox.length = 0;
      this.head = 0;
    } finally {
      this.draining = false;
    }
  }
}

/** Creates two linked transports: what one sends, the other receives (asynchronously, in order). */
export function createMemoryPair(options: MemoryPairOptions = {}): [MemoryTransport, MemoryTransport] {
  const max = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
  const schedule = options.schedule ?? queueMicrotask;
  const a = new MemoryTransport(max, schedule);
  const b = new MemoryTransport(max, schedule);
  a.peer = b;
  b.peer = a;
  return [a, b];
}
