import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { FLUSH_AT, StreamWriter } from './writer.ts';

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
  it('writes a burst as it grows past FLUSH_AT, so held text never piles up unread', async () => {
    const { stream, writes } = recorder();
    const w = new StreamWriter(stream, { onGone: () => {}, onError: () => {} });
    const line = `${'x'.repeat(1023)}\n`;
    const sent: Promise<void>[] = [];
    for (let i = 0; i < 200; i++) sent.push(w.write(line));
    expect(w.pending).toBeLessThan(FLUSH_AT + 1024);
    expect(writes.length).toBeGreaterThanOrEqual(Math.floor((200 * 1024) / (FLUSH_AT + 1024)));
    await Promise.all(sent);
    expect(writes.join('')).toBe(line.repeat(200));
  });

  it('lets the reader begin within the turn: the first FLUSH_AT of a turn is handed over before the turn ends', () => {
    // Sixty-four answers of about 400 bytes, as many tasks in flight finish in one turn.
    const { stream, writes } = recorder();
    const w = new StreamWriter(stream, { onGone: () => {}, onError: () => {} });
    const answer = `${'r'.repeat(399)}\n`;
    for (let i = 0; i < 64; i++) void w.write(answer);
    expect(writes.length).toBeGreaterThanOrEqual(Math.floor((64 * 400) / (FLUSH_AT + 400)));
    expect(writes.length).toBeGreaterThan(0);
    expect(writes.every((text) => text.length <= FLUSH_AT + 400)).toBe(true);
  });
});
