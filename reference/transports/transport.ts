/**
 * The Transport contract shared by the reference library and the conformance harness.
 * A transport moves frames; it never parses them (spec: bindings).
 */
import type { CloseInfo, InboundFrame } from '../core/frame.ts';

export type { CloseInfo, InboundFrame } from '../core/frame.ts';

/**
 * The settled promise a transport's `send` returns for a frame it handed over at once: one object
 * for every such send, so a caller that watches its sends for a failure attaches nothing to each
 * (else a promise and a handler a message).
 */
export const HANDED_OVER: Promise<void> = Promise.resolve();

/**
 * Watches what a send returned for a failure, once for a promise several sends share (HANDED_OVER,
 * one write of a turn's messages); returns it, to pass as `last` with the next send.
 */
export function watchSend(sent: Promise<void>, last: Promise<void> | undefined, failed: (err: unknown) => void): Promise<void> {
  if (sent !== last) sent.catch(failed);
  return sent;
}

/** A bidirectional frame pipe between two TAP peers. */
export interface Transport {
  /** Begins delivering inbound frames; no frame reaches `onmessage` before this is called. */
  start(): Promise<void>;
  /**
   * Sends one serialized TAP message (no terminator); a no-op once the peer is gone. The promise
   * may be shared by several sends (HANDED_OVER, or one write of a turn's messages); it rejects
   * when the frame could not be sent.
   */
  send(text: string): Promise<void>;
  /** Closes the transport with an optional code and reason; `onclose` fires once. */
  close(info?: CloseInfo): Promise<void>;
  /** Sets the negotiated `max_message_bytes`, so longer frames arrive as oversized prefixes. */
  setMaxFrameBytes?(n: number): void;
  /** Bytes handed to `send` that the peer has not taken yet (spec: limits#back-pressure). */
  unsentBytes?(): number;
  /**
   * Drops the connection at once, without a closing handshake, and reads no further frame from
   * it; `onclose` fires with 1006 (spec: limits#back-pressure).
   */
  abort?(reason: string): void;
  /**
   * Where the connection comes from, as far as the binding can tell: the remote address of a
   * WebSocket connection, the NATS user the server vouched for; undefined where the binding
   * cannot tell peers apart (spec: limits#sources).
   */
  readonly origin?: string;
  /**
   * Set by the session once a key is agreed: true for a frame that is an authentic new message
   * of the peer. A binding that numbers its messages gives a frame that fails it no number
   * (spec: bindings-nats#forged-frames).
   */
  screen?: (frame: InboundFrame) => boolean;
  /** Receives each inbound frame in arrival order. */
  onmessage?: (frame: InboundFrame) => void;
  /** Fires once when the transport has closed, whichever side closed it. */
  onclose?: (info: CloseInfo) => void;
  /** Receives errors that do not close the transport by themselves. */
  onerror?: (err: Error) => void;
}

/** Options for `RawSender.sendRaw`. */
export interface RawSendOptions {
  /** Send a WebSocket binary frame instead of a text frame (refused on stdio). */
  binary?: boolean;
}

/** An extension of Transport that sends arbitrary bytes as one frame, for fault injection (invalid UTF-8, binary frames). */
export interface RawSender {
  /** Sends `data` unchanged as one frame; no validation, no encoding. */
  sendRaw(data: Uint8Array, options?: RawSendOptions): Promise<void>;
}

/** A Transport that can also send raw frames. */
export type RawTransport = Transport & RawSender;
