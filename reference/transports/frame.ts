import type { InboundFrame } from './transport.ts';

/** The frame limit every transport applies until `setMaxFrameBytes` lowers it: 16 MiB. */
export const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024;

/** Throws a RangeError unless `n` is a positive safe integer usable as a frame limit. */
export function checkMaxFrameBytes(n: number): number {
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new RangeError(`max frame bytes must be a positive integer, got ${n}`);
  }
  return n;
}

/**
 * Wraps a complete frame, keeping only a `max + 1` byte prefix when it is longer than `max`
 * (spec: limits#bounded-reading).
 */
export function frameOf(bytes: Uint8Array, max: number, binary?: boolean): InboundFrame {
  const oversized = bytes.byteLength > max;
  const frame: InboundFrame = {
    // The prefix is copied so that it does not keep a large buffer alive.
    bytes: oversized ? new Uint8Array(bytes.subarray(0, max + 1)) : bytes,
    oversized,
    byteLength: bytes.byteLength,
  };
  if (binary !== undefined) frame.binary = binary;
  return frame;
}
