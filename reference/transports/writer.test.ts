import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { StreamWriter, isPeerGone } from './writer.ts';

/** A writable that fails every write with `code`. */
function failing(code: string): Writable {
  return new Writable({
    write(_chunk, _enc, cb) {
      cb(Object.assign(new Error(`write ${code}`), { code }));
    },
  });
}

describe('isPeerGone', () => {
  it('recognises the errors that mean the reader went away (spec: shutdown#epipe)', () => {
    for (const code of ['EPIPE', 'ECONNRESET', 'ERR_STREAM_DESTROYED']) {
      expect(isPeerGone(Object.assign(new Error(), { code }))).toBe(true);
    }
    expect(isPeerGone(Object.assign(new Error(), { code: 'EIO' }))).toBe(false);
    expect(isPeerGone(null)).toBe(false);
  });
});

describe('StreamWriter', () => {
  it('reports the peer gone once and then drops writes', async () => {
    const gone: Error[] = [];
    const writer = new StreamWriter(failing('EPIPE'), { onGone: (e) => gone.push(e), onError: () => {} });
    await writer.write('a\n');
    await new Promise((r) => setImmediate(r));
    expect(writer.closed).toBe(true);
    await writer.write('b\n');
    expect(gone).toHaveLength(1);
  });

  it('passes other errors to onError and rejects the write that waits on them', async () => {
    const errors: Error[] = [];
    const writer = new StreamWriter(failing('EIO'), { onGone: () => {}, onError: (e) => errors.push(e) });
    await expect(writer.write('a\n')).rejects.toThrow('write EIO');
    expect(errors.map((e) => e.message)).toEqual(['write EIO']);
  });

  it('resolves a write waiting for drain when the stream is destroyed', async () => {
    const stream = new Writable({ highWaterMark: 1, write() {} });
    const writer = new StreamWriter(stream, { onGone: () => {}, onError: () => {} });
    const pending = writer.write('long enough\n');
    stream.destroy();
    await expect(pending).resolves.toBeUndefined();
  });

  it('ends the stream and resolves, even twice', async () => {
    const stream = new Writable({ write: (_c, _e, cb) => cb() });
    const writer = new StreamWriter(stream, { onGone: () => {}, onError: () => {} });
    await writer.end();
    await writer.end();
    expect(stream.writableFinished).toBe(true);
  });
});
