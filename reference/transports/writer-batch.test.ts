import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { StreamWriter } from './writer.ts';

/** A stream that records each write it is handed. */
function recorder(): { stream: Writable; writes: string[] } {
  const writes: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      writes.push(chunk.toString('utf8'));
      done();
    },
  });
  return { stream, writes };
}

describe('StreamWriter batching', () => {
  it('hands the text of one turn to the stream as one write, in order', async () => {
    const { stream, writes } = recorder();
    const w = new StreamWriter(stream, { onGone: () => {}, onError: () => {} });
    const sent = [w.write('a\n'), w.write('b\n'), w.write('c\n')];
    expect(writes).toEqual([]);
    expect(w.pending).toBe(6);
    await Promise.all(sent);
    expect(writes).toEqual(['a\nb\nc\n']);
    await w.write('d\n');
    expect(writes).toEqual(['a\nb\nc\n', 'd\n']);
  });

  it('writes held text before bytes, and before ending the stream', async () => {
    const { stream, writes } = recorder();
    const w = new StreamWriter(stream, { onGone: () => {}, onError: () => {} });
    void w.write('a\n');
    await w.write(new TextEncoder().encode('b\n'));
    void w.write('c\n');
    await w.end();
    expect(writes).toEqual(['a\n', 'b\n', 'c\n']);
  });
});

describe('StreamWriter bursts', () => {
  it('writes a burst as it grows past 64 KiB, so held text never piles up unread', async () => {
    const { stream, writes } = recorder();
    const w = new StreamWriter(stream, { onGone: () => {}, onError: () => {} });
    const line = `${'x'.repeat(1023)}\n`;
    const sent: Promise<void>[] = [];
    for (let i = 0; i < 200; i++) sent.push(w.write(line));
    expect(w.pending).toBeLessThan(64 * 1024 + 1024);
    expect(writes.length).toBeGreaterThanOrEqual(3);
    await Promise.all(sent);
    expect(writes.join('')).toBe(line.repeat(200));
  });
});
