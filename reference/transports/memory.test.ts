import { describe, expect, it } from 'vitest';
import { createMemoryPair } from './memory.ts';
import { HANDED_OVER, type CloseInfo, type InboundFrame } from './transport.ts';

const dec = new TextDecoder();
const text = (f: InboundFrame): string => dec.decode(f.bytes);
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('createMemoryPair', () => {
  it('delivers what one end sends to the other, in order', async () => {
    const [a, b] = createMemoryPair();
    const got: string[] = [];
    b.onmessage = (f) => got.push(text(f));
    await Promise.all([a.start(), b.start()]);
    for (let i = 0; i < 100; i++) void a.send(`{"i":${i}}`);
    await tick();
    expect(got).toEqual(Array.from({ length: 100 }, (_, i) => `{"i":${i}}`));
  });

  it('answers every send with the one settled promise HANDED_OVER: a caller watching sends attaches nothing to each', async () => {
    const [a, b] = createMemoryPair();
    await b.start();
    expect(a.send('{}')).toBe(HANDED_OVER);
    expect(a.send('{}')).toBe(HANDED_OVER);
  });

  it('delivers asynchronously, never inside send()', async () => {
    const [a, b] = createMemoryPair();
    const got: string[] = [];
    b.onmessage = (f) => got.push(text(f));
    await b.start();
    void a.send('{}');
    expect(got).toEqual([]);
    await tick();
    expect(got).toEqual(['{}']);
  });

  it('works in both directions', async () => {
    const [a, b] = createMemoryPair();
    const atA: string[] = [];
    b.onmessage = (f) => void b.send(text(f).toUpperCase());
    a.onmessage = (f) => atA.push(text(f));
    await Promise.all([a.start(), b.start()]);
    await a.send('"ping"');
    await tick();
    expect(atA).toEqual(['"PING"']);
  });

  it('holds frames until start() and then delivers them first, in order', async () => {
    const [a, b] = createMemoryPair();
    const got: string[] = [];
    b.onmessage = (f) => got.push(text(f));
    await a.send('1');
    await a.send('2');
    await tick();
    expect(got).toEqual([]);
    await b.start();
    await a.send('3');
    await tick();
    expect(got).toEqual(['1', '2', '3']);
  });

  it('closes both ends with the code and reason, after the frames sent before', async () => {
    const [a, b] = createMemoryPair();
    const events: string[] = [];
    const closes: CloseInfo[] = [];
    b.onmessage = (f) => events.push(text(f));
    a.onclose = (i) => closes.push(i);
    b.onclose = (i) => {
      events.push('close');
      closes.push(i);
    };
    await Promise.all([a.start(), b.start()]);
    void a.send('last');
    await a.close({ code: 1008, reason: 'identity' });
    await tick();
    expect(events).toEqual(['last', 'close']);
    expect(closes).toEqual([
      { code: 1008, reason: 'identity' },
      { code: 1008, reason: 'identity' },
    ]);
  });

  it('fires onclose once even when both ends close', async () => {
    const [a, b] = createMemoryPair();
    let count = 0;
    a.onclose = () => count++;
    b.onclose = () => count++;
    await Promise.all([a.start(), b.start()]);
    await Promise.all([a.close(), b.close(), a.close()]);
    await tick();
    expect(count).toBe(2);
  });

  it('drops sends after close', async () => {
    const [a, b] = createMemoryPair();
    const got: string[] = [];
    b.onmessage = (f) => got.push(text(f));
    await Promise.all([a.start(), b.start()]);
    await b.close();
    await expect(a.send('late')).resolves.toBeUndefined();
    await tick();
    expect(got).toEqual([]);
  });

  it('delivers an oversized frame as a flagged prefix with its true length (spec: limits#max-message-bytes)', async () => {
    const [a, b] = createMemoryPair();
    const got: InboundFrame[] = [];
    b.onmessage = (f) => got.push(f);
    b.setMaxFrameBytes(10);
    await b.start();
    await a.send('"0123456789"');
    await a.send('"01234567"');
    await tick();
    expect(got.map((f) => [text(f), f.oversized, f.byteLength])).toEqual([
      ['"0123456789', true, 12],
      ['"01234567"', false, 10],
    ]);
  });

  it('hands a string on as its text, its bytes and byte length those of its UTF-8 form; a lone surrogate arrives as U+FFFD bytes, as UTF-8 carries it', async () => {
    const [a, b] = createMemoryPair();
    const got: InboundFrame[] = [];
    b.onmessage = (f) => got.push(f);
    await b.start();
    await a.send('{"t":"é€😀"}');
    await a.send('{"t":"\ud800"}');
    await tick();
    const utf8 = new TextEncoder().encode('{"t":"é€😀"}');
    expect(got[0].text).toBe('{"t":"é€😀"}');
    expect(got[0].byteLength).toBe(utf8.byteLength);
    expect([...got[0].bytes]).toEqual([...utf8]);
    expect(got[0].oversized).toBe(false);
    expect(got[1].text).toBeUndefined();
    expect(text(got[1])).toBe('{"t":"\ufffd"}');
  });

  it('counts a string against the limit by its UTF-8 bytes, not its length', async () => {
    const [a, b] = createMemoryPair();
    const got: InboundFrame[] = [];
    b.onmessage = (f) => got.push(f);
    b.setMaxFrameBytes(8);
    await b.start();
    await a.send('"ééé"'); // 5 characters, 8 bytes
    await a.send('"éééé"'); // 6 characters, 10 bytes
    await tick();
    expect(got.map((f) => [f.text, f.oversized, f.byteLength])).toEqual([
      ['"ééé"', false, 8],
      [undefined, true, 10],
    ]);
  });

  it('injects raw bytes, invalid UTF-8 included, with sendRaw', async () => {
    const [a, b] = createMemoryPair();
    const got: InboundFrame[] = [];
    b.onmessage = (f) => got.push(f);
    await b.start();
    const raw = new Uint8Array([0x7b, 0xc3, 0x28, 0x7d]);
    await a.sendRaw(raw);
    raw.fill(0);
    await a.sendRaw(new Uint8Array([1, 2]), { binary: true });
    await tick();
    expect([...got[0].bytes]).toEqual([0x7b, 0xc3, 0x28, 0x7d]);
    expect(got[0].binary).toBeUndefined();
    expect(got[1].binary).toBe(true);
  });

  it('reports an exception thrown by a handler to onerror and keeps delivering', async () => {
    const [a, b] = createMemoryPair();
    const got: string[] = [];
    const errors: Error[] = [];
    b.onmessage = (f) => {
      if (text(f) === 'boom') throw new Error('handler failed');
      got.push(text(f));
    };
    b.onerror = (e) => errors.push(e);
    await b.start();
    void a.send('boom');
    void a.send('after');
    await tick();
    expect(errors.map((e) => e.message)).toEqual(['handler failed']);
    expect(got).toEqual(['after']);
  });

  it('can defer deliveries with setImmediate', async () => {
    const [a, b] = createMemoryPair({ schedule: setImmediate });
    const got: string[] = [];
    b.onmessage = (f) => got.push(text(f));
    await b.start();
    await a.send('x');
    await Promise.resolve();
    expect(got).toEqual([]);
    await tick();
    await tick();
    expect(got).toEqual(['x']);
  });
});
