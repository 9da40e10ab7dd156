import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { LineReader, checkOneLine } from './lines.ts';
import type { InboundFrame } from './transport.ts';

const enc = new TextEncoder();
const dec = new TextDecoder();

function reader(max?: number): { r: LineReader; frames: InboundFrame[]; texts: () => string[] } {
  const frames: InboundFrame[] = [];
  const r = new LineReader((f) => frames.push(f), max);
  return { r, frames, texts: () => frames.map((f) => dec.decode(f.bytes)) };
}

describe('LineReader', () => {
  it('emits one frame per line in a single chunk', () => {
    const { r, texts, frames } = reader();
    r.push(enc.encode('{"a":1}\n{"b":2}\n'));
    expect(texts()).toEqual(['{"a":1}', '{"b":2}']);
    expect(frames.every((f) => !f.oversized && f.byteLength === f.bytes.byteLength)).toBe(true);
  });

  it('delivers a line split across three chunks as one frame', () => {
    const { r, texts } = reader();
    r.push(enc.encode('{"hel'));
    r.push(enc.encode('lo":"wor'));
    r.push(enc.encode('ld"}\n'));
    expect(texts()).toEqual(['{"hello":"world"}']);
  });

  it('delivers a line split byte by byte', () => {
    const { r, texts } = reader();
    for (const b of enc.encode('{"x":[1,2,3]}\r\n')) r.push(new Uint8Array([b]));
    expect(texts()).toEqual(['{"x":[1,2,3]}']);
  });

  it('strips one CR before LF, and only one', () => {
    const { r, texts } = reader();
    r.push(enc.encode('a\r\nb\r\r\n'));
    expect(texts()).toEqual(['a', 'b\r']);
  });

  it('strips a CR that arrives in a different chunk than its LF', () => {
    const { r, frames } = reader();
    r.push(enc.encode('abc\r'));
    r.push(enc.encode('\n'));
    expect(frames).toHaveLength(1);
    expect(dec.decode(frames[0].bytes)).toBe('abc');
    expect(frames[0].byteLength).toBe(3);
  });

  it('ignores blank lines and lines of only whitespace (spec: bindings#stdio)', () => {
    const { r, texts } = reader();
    r.push(enc.encode('\n\r\n  \t \n{}\n \r\n'));
    r.push(enc.encode('   '));
    r.push(enc.encode('\t\n'));
    expect(texts()).toEqual(['{}']);
  });

  it('keeps leading and trailing spaces of a non-blank line', () => {
    const { r, texts } = reader();
    r.push(enc.encode('  {} \n'));
    expect(texts()).toEqual(['  {} ']);
  });

  it('flushes a final unterminated line on end()', () => {
    const { r, texts } = reader();
    r.push(enc.encode('{"a":1}\n{"b"'));
    r.push(enc.encode(':2}'));
    expect(texts()).toEqual(['{"a":1}']);
    r.end();
    expect(texts()).toEqual(['{"a":1}', '{"b":2}']);
  });

  it('emits nothing on end() when the input ended with a line feed', () => {
    const { r, frames } = reader();
    r.push(enc.encode('x\n'));
    r.end();
    expect(frames).toHaveLength(1);
  });

  it('refuses a push after end()', () => {
    const { r } = reader();
    r.end();
    expect(() => r.push(enc.encode('x\n'))).toThrow(/after end/);
  });

  it('accepts a line of exactly the limit (spec: limits#max-message-bytes)', () => {
    const { r, frames } = reader(8);
    r.push(enc.encode('12345678\n'));
    r.push(enc.encode('1234'));
    r.push(enc.encode('5678\r\n'));
    expect(frames.map((f) => [dec.decode(f.bytes), f.oversized, f.byteLength])).toEqual([
      ['12345678', false, 8],
      ['12345678', false, 8],
    ]);
  });

  it('flags a line one byte over the limit as oversized with limit + 1 bytes', () => {
    const { r, frames } = reader(8);
    r.push(enc.encode('123456789\n'));
    expect(frames).toHaveLength(1);
    expect(frames[0].oversized).toBe(true);
    expect(dec.decode(frames[0].bytes)).toBe('123456789');
    expect(frames[0].byteLength).toBe(9);
  });

  it('discards an oversized line to its end and counts its exact length (spec: limits#bounded-reading)', () => {
    const { r, frames, texts } = reader(10);
    const big = 'x'.repeat(10_000);
    r.push(enc.encode('{"a":1}\n' + big.slice(0, 3000)));
    r.push(enc.encode(big.slice(3000, 7000)));
    r.push(enc.encode(big.slice(7000) + '\r\n{"b":2}\n'));
    expect(texts()).toEqual(['{"a":1}', 'x'.repeat(11), '{"b":2}']);
    expect(frames[1]).toMatchObject({ oversized: true, byteLength: 10_000 });
    expect(frames[1].bytes.byteLength).toBe(11);
  });

  it('flags an oversized line that lies within one chunk', () => {
    const { r, frames } = reader(4);
    r.push(enc.encode('abcdefgh\nok\n'));
    expect(frames.map((f) => [dec.decode(f.bytes), f.oversized, f.byteLength])).toEqual([
      ['abcde', true, 8],
      ['ok', false, 2],
    ]);
  });

  it('never holds more than limit + 1 bytes of a line that has no end', () => {
    const { r, frames } = reader(100);
    const chunk = new Uint8Array(64 * 1024).fill(0x41);
    for (let i = 0; i < 100; i++) r.push(chunk);
    expect(frames).toHaveLength(0);
    expect((r as unknown as { held: number }).held).toBe(101);
    r.end();
    expect(frames[0]).toMatchObject({ oversized: true, byteLength: 100 * 64 * 1024 });
    expect(frames[0].bytes.byteLength).toBe(101);
  });

  it('counts multi-byte UTF-8 characters as bytes', () => {
    const { r, frames } = reader(5);
    r.push(enc.encode('ééé\n'));
    expect(frames[0]).toMatchObject({ oversized: true, byteLength: 6 });
  });

  it('passes invalid UTF-8 through untouched', () => {
    const { r, frames } = reader();
    r.push(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d, 0x0a]));
    expect([...frames[0].bytes]).toEqual([0x7b, 0xff, 0xfe, 0x7d]);
  });

  it('applies a new limit to the line in progress and the lines after it', () => {
    const { r, frames } = reader(100);
    r.push(enc.encode('0123456789\n01234'));
    r.setMaxFrameBytes(4);
    r.push(enc.encode('56789\n0123\n'));
    expect(frames.map((f) => [dec.decode(f.bytes), f.oversized, f.byteLength])).toEqual([
      ['0123456789', false, 10],
      ['01234', true, 10],
      ['0123', false, 4],
    ]);
    expect(r.maxFrameBytes).toBe(4);
  });

  it('refuses a limit that is not a positive integer', () => {
    expect(() => new LineReader(() => {}, 0)).toThrow(RangeError);
    expect(() => reader().r.setMaxFrameBytes(1.5)).toThrow(RangeError);
  });

  it('reads 10 000 lines from one chunk in order', () => {
    const { r, frames } = reader();
    const text = Array.from({ length: 10_000 }, (_, i) => `{"i":${i}}`).join('\n') + '\n';
    r.push(enc.encode(text));
    expect(frames).toHaveLength(10_000);
    expect(dec.decode(frames[9_999].bytes)).toBe('{"i":9999}');
    expect(frames.every((f, i) => JSON.parse(dec.decode(f.bytes)).i === i)).toBe(true);
  });

  it('reads a 4 MiB line split into 4 KiB chunks in linear time', () => {
    const { r, frames } = reader();
    const size = 4 * 1024 * 1024;
    const chunk = new Uint8Array(4096).fill(0x20);
    chunk[0] = 0x22;
    const started = performance.now();
    for (let sent = 0; sent < size; sent += chunk.byteLength) r.push(chunk);
    r.push(enc.encode('\n'));
    expect(frames).toHaveLength(1);
    expect(frames[0].byteLength).toBe(size);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('emits a line whose bytes are a view that survives later pushes', () => {
    const { r, frames } = reader();
    r.push(enc.encode('{"a"'));
    const second = enc.encode(':1}\n');
    r.push(second);
    second.fill(0);
    expect(dec.decode(frames[0].bytes)).toBe('{"a":1}');
  });
});

/** The obvious, unbounded reading of the same rules, to compare against. */
function referenceFrames(input: Uint8Array, max: number): Array<[number[], boolean, number]> {
  const out: Array<[number[], boolean, number]> = [];
  let start = 0;
  const lines: Uint8Array[] = [];
  for (let i = 0; i <= input.length; i++) {
    if (i === input.length || input[i] === 0x0a) {
      lines.push(input.subarray(start, i));
      start = i + 1;
    }
  }
  if (input.length > 0 && input[input.length - 1] === 0x0a) lines.pop();
  for (let line of lines) {
    if (line.length > 0 && line[line.length - 1] === 0x0d) line = line.subarray(0, -1);
    if (line.every((b) => b === 0x20 || b === 0x09 || b === 0x0d || b === 0x0a)) continue;
    const oversized = line.length > max;
    out.push([[...line.subarray(0, oversized ? max + 1 : line.length)], oversized, line.length]);
  }
  return out;
}

describe('LineReader against a reference reading', () => {
  it('emits the same frames whatever the chunking', () => {
    const byte = fc.constantFrom(0x0a, 0x0d, 0x20, 0x09, 0x41, 0x7b, 0xff);
    fc.assert(
      fc.property(
        fc.tuple(fc.array(byte, { maxLength: 200 }), fc.array(fc.nat(40), { maxLength: 20 }), fc.integer({ min: 1, max: 12 })),
        ([bytes, cuts, max]) => {
          const input = new Uint8Array(bytes);
          const got: Array<[number[], boolean, number]> = [];
          const r = new LineReader((f) => got.push([[...f.bytes], f.oversized, f.byteLength]), max);
          let at = 0;
          for (const cut of cuts) {
            r.push(input.slice(at, Math.min(input.length, at + cut)));
            at = Math.min(input.length, at + cut);
          }
          r.push(input.slice(at));
          r.end();
          expect(got).toEqual(referenceFrames(input, max));
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('checkOneLine', () => {
  it('refuses text with a line feed', () => {
    expect(() => checkOneLine('{"a":\n1}')).toThrow(/line feed/);
    expect(() => checkOneLine('{"a":1}')).not.toThrow();
  });
});
