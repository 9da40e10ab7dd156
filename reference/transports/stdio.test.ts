import { spawn } from 'node:child_process';
import { PassThrough, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { STDIO_EOF, STDIO_EPIPE, createStdioAgentTransport, spawnStdioTransport } from './stdio.ts';
import type { CloseInfo, InboundFrame } from './transport.ts';

const dec = new TextDecoder();
const text = (f: InboundFrame): string => dec.decode(f.bytes);
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

function agentOver(): { input: PassThrough; output: PassThrough; written: () => string } {
  const input = new PassThrough();
  const output = new PassThrough();
  const chunks: Buffer[] = [];
  output.on('data', (c: Buffer) => chunks.push(c));
  return { input, output, written: () => Buffer.concat(chunks).toString('utf8') };
}

function waitFor<T>(register: (done: (value: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve) => register(resolve));
}

describe('createStdioAgentTransport', () => {
  it('delivers each input line as a frame and writes each send as one line', async () => {
    const { input, output, written } = agentOver();
    const t = createStdioAgentTransport({ input, output });
    const got: string[] = [];
    t.onmessage = (f) => got.push(text(f));
    await t.start();
    input.write('{"a":1}\n{"b"');
    input.write(':2}\r\n\n');
    await t.send('{"c":3}');
    await t.send('{"d":4}');
    await tick();
    expect(got).toEqual(['{"a":1}', '{"b":2}']);
    expect(written()).toBe('{"c":3}\n{"d":4}\n');
  });

  it("answers the sends of one turn with one promise, that of the turn's write", async () => {
    const { input, output, written } = agentOver();
    const t = createStdioAgentTransport({ input, output });
    await t.start();
    const first = t.send('{"a":1}');
    expect(t.send('{"b":2}')).toBe(first);
    await first;
    expect(written()).toBe('{"a":1}\n{"b":2}\n');
  });

  it('reads nothing before start()', async () => {
    const { input, output } = agentOver();
    const t = createStdioAgentTransport({ input, output });
    const got: string[] = [];
    t.onmessage = (f) => got.push(text(f));
    input.write('{}\n');
    await tick();
    expect(got).toEqual([]);
    await t.start();
    await tick();
    expect(got).toEqual(['{}']);
  });

  it('fires onclose with reason eof at end of input, after the final unterminated line (spec: bindings#stdio)', async () => {
    const { input, output } = agentOver();
    const t = createStdioAgentTransport({ input, output });
    const events: string[] = [];
    t.onmessage = (f) => events.push(text(f));
    const closed = waitFor<CloseInfo>((done) => (t.onclose = done));
    await t.start();
    input.end('{"last":true}');
    expect(await closed).toEqual(STDIO_EOF);
    expect(STDIO_EOF).toEqual({ code: 1000, reason: 'eof' });
    expect(events).toEqual(['{"last":true}']);
  });

  it('still sends after end of input, so the agent can say farewell (spec: shutdown#end-of-input)', async () => {
    const { input, output, written } = agentOver();
    const t = createStdioAgentTransport({ input, output });
    const closed = waitFor<CloseInfo>((done) => (t.onclose = done));
    await t.start();
    input.end();
    await closed;
    await t.send('{"type":"session.farewell"}');
    await t.close();
    expect(written()).toBe('{"type":"session.farewell"}\n');
    await t.send('{"dropped":true}');
    expect(written()).toBe('{"type":"session.farewell"}\n');
  });

  it('waits for drain when the output is full', async () => {
    let release: (() => void) | undefined;
    const output = new Writable({
      highWaterMark: 4,
      write(_chunk, _enc, cb) {
        release = cb;
      },
    });
    const t = createStdioAgentTransport({ input: new PassThrough(), output });
    await t.start();
    let sent = false;
    const sending = t.send('{"big":"0123456789"}').then(() => (sent = true));
    await tick();
    expect(sent).toBe(false);
    release!();
    await sending;
    expect(sent).toBe(true);
  });

  it('turns EPIPE into a close with reason epipe and drops later sends', async () => {
    const output = new Writable({
      write(_chunk, _enc, cb) {
        cb(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
      },
    });
    const t = createStdioAgentTransport({ input: new PassThrough(), output });
    const errors: Error[] = [];
    t.onerror = (e) => errors.push(e);
    const closed = waitFor<CloseInfo>((done) => (t.onclose = done));
    await t.start();
    await t.send('{}');
    expect(await closed).toEqual(STDIO_EPIPE);
    await expect(t.send('{}')).resolves.toBeUndefined();
    expect(errors).toEqual([]);
  });

  it('reports other write errors to onerror', async () => {
    const output = new Writable({
      highWaterMark: 1,
      write(_chunk, _enc, cb) {
        setImmediate(() => cb(Object.assign(new Error('disk on fire'), { code: 'EIO' })));
      },
    });
    const t = createStdioAgentTransport({ input: new PassThrough(), output });
    const errors = waitFor<Error>((done) => (t.onerror = done));
    await t.start();
    await expect(t.send('{"x":1}')).rejects.toThrow(/disk on fire/);
    expect((await errors).message).toBe('disk on fire');
  });

  it('refuses a message containing a line feed, and binary frames', async () => {
    const { input, output } = agentOver();
    const t = createStdioAgentTransport({ input, output });
    await expect(t.send('{\n}')).rejects.toThrow(/line feed/);
    await expect(t.sendRaw(new Uint8Array([1]), { binary: true })).rejects.toThrow(/binary/);
  });

  it('writes raw bytes unchanged, invalid UTF-8 included', async () => {
    const { input, output } = agentOver();
    const chunks: Buffer[] = [];
    output.on('data', (c: Buffer) => chunks.push(c));
    const t = createStdioAgentTransport({ input, output });
    await t.sendRaw(new Uint8Array([0x7b, 0xff, 0x7d]));
    expect([...Buffer.concat(chunks)]).toEqual([0x7b, 0xff, 0x7d, 0x0a]);
  });

  it('delivers an oversized line as a flagged prefix once the limit is set', async () => {
    const { input, output } = agentOver();
    const t = createStdioAgentTransport({ input, output });
    const got: InboundFrame[] = [];
    t.onmessage = (f) => got.push(f);
    t.setMaxFrameBytes(8);
    await t.start();
    input.write('"0123456789"\n"ok"\n');
    await tick();
    expect(got.map((f) => [text(f), f.oversized, f.byteLength])).toEqual([
      ['"01234567', true, 12],
      ['"ok"', false, 4],
    ]);
  });

  it('does not crash an agent process whose requester stopped reading (spec: shutdown#epipe)', async () => {
    const stdio = fileURLToPath(new URL('./stdio.ts', import.meta.url));
    const script = `
      import { createStdioAgentTransport } from ${JSON.stringify(stdio)};
      const t = createStdioAgentTransport();
      t.onclose = (info) => { process.stderr.write('closed:' + info.reason + '\\n'); void t.close(); };
      t.onmessage = async () => { for (let i = 0; i < 2000; i++) await t.send(JSON.stringify({ i, pad: 'x'.repeat(1000) })); };
      await t.start();`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.stdout.destroy();
    child.stdin.write('{"go":1}\n');
    const [code, signal] = await new Promise<[number | null, string | null]>((r) => child.on('close', (c, s) => r([c, s])));
    expect(stderr).toContain('closed:epipe');
    expect(stderr).not.toContain('Error');
    expect([code, signal]).toEqual([0, null]);
  }, 20_000);

  it('lets an agent process send its farewell after end of input and exit 0 (spec: bindings#stdio)', async () => {
    const stdio = fileURLToPath(new URL('./stdio.ts', import.meta.url));
    const script = `
      import { createStdioAgentTransport } from ${JSON.stringify(stdio)};
      const t = createStdioAgentTransport();
      t.onmessage = (f) => void t.send(new TextDecoder().decode(f.bytes));
      t.onclose = async (info) => { await t.send(JSON.stringify({ farewell: info.reason })); await t.close(); };
      await t.start();`;
    const requester = spawnStdioTransport(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script]);
    const got: string[] = [];
    requester.onmessage = (f) => got.push(text(f));
    const closed = waitFor<CloseInfo>((done) => (requester.onclose = done));
    await requester.start();
    await requester.send('{"hello":1}');
    await requester.close();
    expect(await closed).toEqual({ code: 1000, reason: 'exited with code 0' });
    expect(got).toEqual(['{"hello":1}', '{"farewell":"eof"}']);
  }, 20_000);
});
