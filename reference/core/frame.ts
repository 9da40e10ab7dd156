/**
 * The frame every layer shares: what a transport hands up before anything is decoded, and why a
 * transport closed (spec: bindings).
 */

/** One inbound frame exactly as it arrived: raw bytes, not yet decoded. */
export interface InboundFrame {
  /** The frame: a stdio line without its terminator, or a WebSocket message payload. */
  bytes: Uint8Array;
  /** True if the frame exceeded the reader's limit; `bytes` then holds only a prefix. */
  oversized: boolean;
  /** The frame's true length as far as the reader saw (at least limit + 1 when oversized). */
  byteLength: number;
  /** True for a WebSocket binary frame, which the protocol refuses. */
  binary?: boolean;
  /**
   * The frame as a well-formed string, when the transport carried it as one (the in-memory pair):
   * `bytes` are then its UTF-8 form, made only when read, and a decoder takes the text as it is.
   */
  text?: string;
}

/** Why a transport closed: a WebSocket-style close code, a short reason, and the error if one caused it. */
export interface CloseInfo {
  code?: number;
  reason?: string;
  error?: Error;
}
