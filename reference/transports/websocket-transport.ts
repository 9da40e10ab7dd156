import type WebSocket from 'ws';

/** ws's readyState values (ws is loaded only when a WebSocket is opened). */
const OPEN = 1;
const CLOSED = 3;
import type { CloseInfo, InboundFrame, RawSendOptions, RawTransport } from './transport.ts';
import { checkMaxFrameBytes, frameOf } from './frame.ts';

/** The WebSocket subprotocol of TAP 1.x (spec: bindings#websocket). */
export const TAP_SUBPROTOCOL = 'tap.v1';

/** The close codes the binding uses (spec: bindings#websocket-close-codes). */
export const CloseCode = Object.freeze({
  /** After a farewell: the session ended normally. */
  NORMAL: 1000,
  /** The endpoint is going away (server shutting down). */
  GOING_AWAY: 1001,
  /** The peer broke the WebSocket protocol. */
  PROTOCOL_ERROR: 1002,
  /** Abnormal: the connection dropped without a close frame (never sent). */
  ABNORMAL: 1006,
  /** A text frame held invalid UTF-8 where the WebSocket layer checks it. */
  INVALID_PAYLOAD: 1007,
  /** Identity or authentication failure. */
  POLICY_VIOLATION: 1008,
  /** A frame exceeded the transport ceiling (`maxPayload`). */
  MESSAGE_TOO_BIG: 1009,
  /** An internal error of the endpoint. */
  INTERNAL_ERROR: 1011,
});

/** The close code `ws` sends for each of its receive errors. */
function closeCodeOf(err: Error | undefined): number | undefined {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string' || !code.startsWith('WS_ERR_')) return undefined;
  if (code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') return CloseCode.MESSAGE_TOO_BIG;
  if (code === 'WS_ERR_INVALID_UTF8') return CloseCode.INVALID_PAYLOAD;
  return CloseCode.PROTOCOL_ERROR;
}

/** True for a code an endpoint may put in a close frame (RFC 6455 §7.4). */
function isSendableCode(code: number): boolean {
  return (code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999);
}

/** Cuts a close reason to the 123 bytes a close frame allows, on a character boundary. */
function fitReason(reason: string): string {
  let out = reason;
  while (Buffer.byteLength(out) > 123) out = out.slice(0, -1);
  return out;
}

/** Joins whatever `ws` hands over into one byte array. */
function toBytes(data: WebSocket.RawData): Uint8Array {
  if (Array.isArray(data)) return Buffer.concat(data);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return data;
}

/**
 * One TAP session over one WebSocket connection (spec: bindings#websocket). Text frames are
 * delivered as their raw bytes, binary frames flagged `binary: true`; frames above the
 * negotiated limit arrive as oversized prefixes, frames above `maxPayload` close with 1009.
 * `sendRaw` sends any bytes as a text or binary frame, for fault injection.
 */
export class WebSocketTransport implements RawTransport {
  onmessage?: (frame: InboundFrame) => void;
  onclose?: (info: CloseInfo) => void;
  onerror?: (err: Error) => void;

  private max: number;
  private started = false;
  /** Aborted: frames still in the socket's buffers are dropped unread. */
  private cut = false;
  private pending: InboundFrame[] = [];
  private lastError?: Error;
  private localClose?: CloseInfo;
  private closeInfo?: CloseInfo;
  private readonly closeWaiters: Array<() => void> = [];

  /**
   * Wraps an open socket; frames are held (and the socket paused) until `start()`. `origin` is
   * where the connection comes from, for an accepted one (spec: limits#sources).
   */
  constructor(
    readonly socket: WebSocket,
    maxFrameBytes: number,
    readonly origin?: string,
  ) {
    this.max = checkMaxFrameBytes(maxFrameBytes);
    socket.on('message', (data, isBinary) => {
      if (this.cut) return;
      const frame = frameOf(toBytes(data), this.max, isBinary ? true : undefined);
      if (this.started) this.onmessage?.(frame);
      else this.pending.push(frame);
    });
    socket.on('error', (err) => {
      this.lastError = err;
      this.onerror?.(err);
    });
    socket.on('close', (code, reason) => this.closed(code, reason.toString('utf8')));
    socket.pause();
  }

  /** The subprotocol the two ends agreed on. */
  get protocol(): string {
    return this.socket.protocol;
  }

  /** Delivers the frames held so far, then the rest as they come. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    const held = this.pending;
    this.pending = [];
    for (const frame of held) this.onmessage?.(frame);
    this.socket.resume();
  }

  /** Sends one text frame; resolves once written, and is a no-op when the socket is not open. */
  send(text: string): Promise<void> {
    return this.write(text, false);
  }

  /** Sends `data` unchanged as a text frame (even if not UTF-8) or, with `binary`, a binary frame. */
  sendRaw(data: Uint8Array, options: RawSendOptions = {}): Promise<void> {
    return this.write(data, options.binary === true);
  }

  /**
   * Sends a close frame (default 1000) and resolves when the connection has closed; codes
   * a close frame cannot carry become 1011.
   */
  close(info: CloseInfo = {}): Promise<void> {
    if (this.closeInfo !== undefined) return Promise.resolve();
    const done = new Promise<void>((resolve) => this.closeWaiters.push(resolve));
    if (this.localClose === undefined && this.socket.readyState !== CLOSED) {
      const requested = info.code ?? CloseCode.NORMAL;
      const code = isSendableCode(requested) ? requested : CloseCode.INTERNAL_ERROR;
      const reason = fitReason(info.reason ?? '');
      this.localClose = { code, reason };
      this.socket.close(code, reason);
      // A paused socket would never read the peer's close frame; frames met meanwhile stay held.
      this.socket.resume();
    }
    return done;
  }

  /** Forces the connection shut without a close handshake. */
  terminate(): void {
    this.socket.terminate();
  }

  /** Drops the connection at once; frames the socket still holds are not read (spec: limits#back-pressure). */
  abort(reason: string): void {
    if (this.cut || this.closeInfo !== undefined) return;
    this.cut = true;
    this.pending = [];
    this.localClose ??= { code: CloseCode.ABNORMAL, reason };
    this.socket.terminate();
  }

  /** Bytes queued on the socket that the peer has not taken yet. */
  unsentBytes(): number {
    return this.socket.bufferedAmount;
  }

  /** Sets the negotiated `max_message_bytes`; `maxPayload` stays the hard ceiling. */
  setMaxFrameBytes(n: number): void {
    this.max = checkMaxFrameBytes(n);
  }

  private write(data: string | Uint8Array, binary: boolean): Promise<void> {
    if (this.socket.readyState !== OPEN) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.socket.send(data, { binary }, (err) => {
        if (!err || this.socket.readyState !== OPEN) return resolve();
        this.onerror?.(err);
        reject(err);
      });
    });
  }

  private closed(code: number, reason: string): void {
    const failure = closeCodeOf(this.lastError);
    const info: CloseInfo =
      failure !== undefined
        ? { code: failure, reason: this.lastError!.message }
        : this.localClose !== undefined
          ? { ...this.localClose }
          : { code, reason };
    if (this.lastError) info.error = this.lastError;
    this.closeInfo = info;
    if (!this.started) {
      // Frames that arrived before start() are still handed out, then the close.
      this.started = true;
      for (const frame of this.pending) this.onmessage?.(frame);
      this.pending = [];
    }
    this.onclose?.(info);
    for (const resolve of this.closeWaiters.splice(0)) resolve();
  }
}
