import { describe, expect, it } from 'vitest';
import { decodeFrame } from './decode.ts';

const frame = (text: string) => ({ bytes: new TextEncoder().encode(text), byteLength: Buffer.byteLength(text), oversized: false });
const decode = (text: string) => decodeFrame(frame(text), { maxMessageBytes: 1 << 20 });

describe('what a broken frame is read as (spec: errors#no-replies-to-errors)', () => {
  it('takes the type of a broken frame only from its top-level object', () => {
    const nested = decode('{"protocol":"tap/1.0","message_id":"m-1","type":"task.request","payload":{"type":"error"},');
    expect(nested).toMatchObject({ ok: false, replyTo: 'm-1', type: 'task.request', error: { code: 'MALFORMED_MESSAGE' } });
    const onlyNested = decode(`{"payload":{"pad":"${'x'.repeat(1000)}","type":"error"},"message_id":"m-2",`);
    expect(onlyNested).toMatchObject({ ok: false, replyTo: 'm-2' });
    expect((onlyNested as { type?: string }).type).toBeUndefined();
  });

  it('still reads a broken error as an error, so that it is never answered', () => {
    expect(decode('{"type":"error","message_id":"m-3","payload":{')).toMatchObject({ ok: false, type: 'error', replyTo: 'm-3' });
  });

  it('reads no ids from a frame that is not an object, or from inside its strings', () => {
    const r = decode('[{"type":"error","message_id":"m-4"}');
    expect(r).toMatchObject({ ok: false });
    expect(r).not.toHaveProperty('type');
    expect(r).not.toHaveProperty('replyTo');
    const quoted = decode('{"note":"\\"type\\":\\"error\\"","message_id":"m-5",');
    expect(quoted).toMatchObject({ ok: false, replyTo: 'm-5' });
    expect(quoted).not.toHaveProperty('type');
  });

  it('scans deep nesting without recursion', () => {
    const deep = `{"message_id":"m-6","payload":${'['.repeat(50_000)}`;
    expect(decode(deep)).toMatchObject({ ok: false, replyTo: 'm-6' });
  });
});
