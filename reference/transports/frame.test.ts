import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_FRAME_BYTES, checkMaxFrameBytes, frameOf } from './frame.ts';

describe('frameOf', () => {
  it('passes a frame within the limit through as it is', () => {
    const bytes = new Uint8Array([1, 2, 3]);
    expect(frameOf(bytes, 3)).toEqual({ bytes, oversized: false, byteLength: 3 });
  });

  it('keeps a copied prefix of limit + 1 bytes of a longer frame', () => {
    const bytes = new Uint8Array([1, 2, 3, 4, 5]);
    const frame = frameOf(bytes, 2);
    bytes.fill(0);
    expect([...frame.bytes]).toEqual([1, 2, 3]);
    expect(frame).toMatchObject({ oversized: true, byteLength: 5 });
  });

  it('marks binary frames only when asked', () => {
    expect(frameOf(new Uint8Array(1), 1, true).binary).toBe(true);
    expect('binary' in frameOf(new Uint8Array(1), 1)).toBe(false);
  });
});

describe('checkMaxFrameBytes', () => {
  it('accepts positive integers and refuses anything else', () => {
    expect(checkMaxFrameBytes(1)).toBe(1);
    expect(DEFAULT_MAX_FRAME_BYTES).toBe(16 * 1024 * 1024);
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => checkMaxFrameBytes(bad)).toThrow(RangeError);
    }
  });
});
