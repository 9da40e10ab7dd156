import type { Readable, Writable } from 'node:stream';
import type { CloseInfo, InboundFrame, RawSendOptions, RawTransport } from './transport.ts';
import { LineReader } from './lines.ts';
import { DEFAULT_MAX_FRAME_BYTES } from './frame.ts';
import { StreamWriter, sendLine } from './writer.ts';

export { spawnStdioTransport, ChildStdioTransport } from './stdio-child.ts';
export type { ChildExit, SpawnStdioOptions } from './stdio-child.ts';

/** The close an agent sees when its input ends: the requester is gone (spec: bindings#stdio). */
export const STDIO_EOF: Readonly<CloseInfo> = Object.freeze({ code: 1000, reason: 'eof' });

/** The close an agent sees when its output breaks (EPIPE): nobody reads it any more. */
export const STDIO_EPIPE: Readonly<CloseInfo> = Object.freeze({ code: 1001, reason: 'epipe' });

const LF = new Uint8Array([0x0a]);

/** Options for `createStdioAgentTransport`. */
export interface StdioAgentOptions {
  /** Where frames come from (default `process.stdin`). */
  input?: Readable;
  /** Where frames go (default `process.stdout`, which must carry nothing but TAP messages). */
  output?: Writable;
  /** The initial frame limit (default 16 MiB) until `setMaxFrameBytes`. */
  maxFrameBytes?: number;
}

/**
 * The agent's end of the stdio binding: NDJSON in on `input`, out on `output`.
 *
 * End of input fires `onclose` with `STDIO_EOF` but leaves the output open (half-closed),
 * so the agent can still send its hand-offs and farewell before it calls `close()`
 * (spec: shutdown#end-of-input). A broken output (EPIPE) stops reading, fires `onclose`
 * with `STDIO_EPIPE`, and drops later sends; it never crashes the process.
 */
export class StdioAgentTransport implements RawTransport {
  onmessage?: (frame: InboundFrame) => void;
  onclose?: (info: CloseInfo) => void;
  onerror?: (err: Error) => void;

  private readonly input: Readable;
  private readonly reader: LineReader;
  private readonly writer: StreamWriter;
  private started = false;
  private closedLocally = false;
  private closeFired = false;

  /** Wraps the two streams; reading begins at `start()`. */
  constructor(options: StdioAgentOptions = {}) {
    this.input = options.input ?? process.stdin;
    const output = options.output ?? process.stdout;
    this.reader = new LineReader((frame) => this.onmessage?.(frame), options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES);
    this.writer = new StreamWriter(output, {
      onGone: () => {
        // Nobody can read a reply any more, so input stops here too.
        this.detach();
        this.fireClose(STDIO_EPIPE);
      },
      onError: (err) => this.onerror?.(err),
    });
  }

  /** Starts reading input lines. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.input.on('data', this.onData);
    this.input.once('end', this.onEnd);
    this.input.once('close', this.onEnd);
    this.input.on('error', this.onInputError);
    this.input.resume();
  }

  /** Writes `text` and a line feed, waiting for 'drain' when the pipe is full. */
  send(text: string): Promise<void> {
    return sendLine(this.closedLocally ? undefined : this.writer, text);
  }

  /** Writes `data` and a line feed unchanged; stdio has no binary frames. */
  async sendRaw(data: Uint8Array, options: RawSendOptions = {}): Promise<void> {
    if (options.binary) throw new TypeError('stdio has no binary frames');
    if (this.closedLocally) return;
    await this.writer.write(Buffer.concat([data, LF]));
  }

  /** Bytes written to the output that its reader has not taken yet. */
  unsentBytes(): number {
    return this.writer.pending;
  }

  /** Stops reading, flushes and ends the output, and fires `onclose` if it has not fired. */
  async close(info: CloseInfo = { code: 1000, reason: 'closed' }): Promise<void> {
    if (this.closedLocally) return;
    this.closedLocally = true;
    this.detach();
    await this.writer.end();
    this.fireClose(info);
  }

  /** Sets the negotiated `max_message_bytes` for the lines that follow. */
  setMaxFrameBytes(n: number): void {
    this.reader.setMaxFrameBytes(n);
  }

  private readonly onData = (chunk: Buffer | string): void => {
    this.reader.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  };

  private readonly onEnd = (): void => {
    this.detach();
    this.reader.end();
    this.fireClose(STDIO_EOF);
  };

  private readonly onInputError = (err: Error): void => {
    this.onerror?.(err);
  };

  private detach(): void {
    this.input.off('data', this.onData);
    this.input.off('end', this.onEnd);
    this.input.off('close', this.onEnd);
    // The error listener stays, so a late input error cannot crash the process.
    this.input.pause();
  }

  private fireClose(info: CloseInfo): void {
    if (this.closeFired) return;
    this.closeFired = true;
    this.onclose?.({ ...info });
  }
}

/** Creates the agent's end of the stdio binding over `input` and `output` (default: this process's stdin and stdout). */
export function createStdioAgentTransport(options: StdioAgentOptions = {}): StdioAgentTransport {
  return new StdioAgentTransport(options);
}
