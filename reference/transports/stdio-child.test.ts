import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnStdioTransport } from './stdio-child.ts';
import type { CloseInfo, InboundFrame } from './transport.ts';

const dec = new TextDecoder();
const text = (f: InboundFrame): string => dec.decode(f.bytes);
const ECHO = "require('readline').createInterface({ input: process.stdin }).on('line', (l) => process.stdout.write(l + '\\n'));";

function waitFor<T>(register: (done: (value: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve) => register(resolve));
}

// Each case starts a Node process, which can take seconds on a loaded machine.
describe('spawnStdioTransport', { timeout: 15_000 }, () => {
  it('speaks NDJSON with a child that echoes lines, in order', async () => {
    const t = spawnStdioTransport(process.execPath, ['-e', ECHO]);
    const got: string[] = [];
    const all = waitFor<void>((done) => {
      t.onmessage = (f) => {
        got.push(text(f));
        if (got.length === 500) done();
      };
    });
    await t.start();
    expect(t.child?.pid).toBeTypeOf('number');
    for (let i = 0; i < 500; i++) void t.send(`{"i":${i}}`);
    await all;
    expect(got).toEqual(Array.from({ length: 500 }, (_, i) => `{"i":${i}}`));
    await t.close();
  });

  it('delivers lines that are not JSON as frames, for the decoder to diagnose', async () => {
    const t = spawnStdioTransport(process.execPath, ['-e', "console.log('Starting agent...'); console.log('{}')"]);
    const got: string[] = [];
    t.onmessage = (f) => got.push(text(f));
    const closed = waitFor<CloseInfo>((done) => (t.onclose = done));
    await t.start();
    await closed;
    expect(got).toEqual(['Starting agent...', '{}']);
  });

  it('flushes a final line without a line feed when the child exits', async () => {
    const t = spawnStdioTransport(process.execPath, ['-e', 'process.stdout.write(\'{"a":1}\\n{"b":2}\')']);
    const got: string[] = [];
    t.onmessage = (f) => got.push(text(f));
    const closed = waitFor<CloseInfo>((done) => (t.onclose = done));
    await t.start();
    await closed;
    expect(got).toEqual(['{"a":1}', '{"b":2}']);
  });

  it('ends stdin on close() and reports a clean exit', async () => {
    const t = spawnStdioTransport(process.execPath, ['-e', ECHO]);
    const closed = waitFor<CloseInfo>((done) => (t.onclose = done));
    await t.start();
    await t.close();
    expect(await closed).toEqual({ code: 1000, reason: 'exited with code 0' });
    expect(await t.exited).toEqual({ code: 0, signal: null });
    expect(t.exitCode).toBe(0);
  });

  it('kills a child that ignores end of input once the grace period is over', async () => {
    const t = spawnStdioTransport(process.execPath, ['-e', 'process.stdin.resume(); setInterval(() => {}, 1000)'], {
      closeGraceMs: 200,
    });
    const closed = waitFor<CloseInfo>((done) => (t.onclose = done));
    await t.start();
    await t.close();
    expect(await t.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(await closed).toEqual({ code: 1011, reason: 'killed by SIGKILL' });
  });

  it('reports a child that exits on its own with a failure status', async () => {
    const t = spawnStdioTransport(process.execPath, ['-e', 'process.exit(3)']);
    const closed = waitFor<CloseInfo>((done) => (t.onclose = done));
    await t.start();
    expect(await closed).toEqual({ code: 1011, reason: 'exited with code 3' });
    expect(t.exitCode).toBe(3);
  });

  it('rejects start() with a clear message when the command does not exist', async () => {
    const t = spawnStdioTransport('./no-such-agent', []);
    await expect(t.start()).rejects.toThrow('could not start agent: ./no-such-agent: no such file');
    await expect(t.start()).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await t.exited).toMatchObject({ code: null, signal: null });
    await expect(t.close()).resolves.toBeUndefined();
  });

  it('rejects start() with a clear message when the file is not executable', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-stdio-'));
    const file = join(dir, 'agent.sh');
    writeFileSync(file, '#!/bin/sh\necho hi\n');
    chmodSync(file, 0o644);
    const t = spawnStdioTransport(file, []);
    await expect(t.start()).rejects.toThrow(`could not start agent: ${file}: permission denied`);
    rmSync(dir, { recursive: true, force: true });
  });

  it('names a missing working directory instead of blaming the command', async () => {
    const t = spawnStdioTransport(process.execPath, ['-e', ''], { cwd: '/no/such/dir' });
    await expect(t.start()).rejects.toThrow(/working directory \/no\/such\/dir does not exist/);
  });

  it('does not crash when sending to a child that has exited (EPIPE)', async () => {
    const t = spawnStdioTransport(process.execPath, ['-e', 'process.exit(0)']);
    const errors: Error[] = [];
    t.onerror = (e) => errors.push(e);
    await t.start();
    await t.exited;
    const big = JSON.stringify({ pad: 'x'.repeat(256 * 1024) });
    for (let i = 0; i < 20; i++) await t.send(big);
    await t.close();
    expect(errors).toEqual([]);
  });

  it('keeps the child stderr lines when stderr is piped', async () => {
    const t = spawnStdioTransport(process.execPath, ['-e', "console.error('log one'); console.error('log two')"], {
      stderr: 'pipe',
    });
    const closed = waitFor<CloseInfo>((done) => (t.onclose = done));
    await t.start();
    await closed;
    expect(t.stderrLines).toEqual(['log one', 'log two']);
  });

  it('hands stderr lines to a callback', async () => {
    const lines: string[] = [];
    const t = spawnStdioTransport(process.execPath, ['-e', "console.error('warn: x')"], {
      stderr: (line) => lines.push(line),
    });
    const closed = waitFor<CloseInfo>((done) => (t.onclose = done));
    await t.start();
    await closed;
    expect(lines).toEqual(['warn: x']);
  });

  it('passes the environment and working directory to the child', async () => {
    const t = spawnStdioTransport(process.execPath, ['-e', 'console.log(JSON.stringify([process.env.TAP_X, process.cwd()]))'], {
      env: { ...process.env, TAP_X: 'yes' },
      cwd: tmpdir(),
    });
    const got: string[] = [];
    t.onmessage = (f) => got.push(text(f));
    const closed = waitFor<CloseInfo>((done) => (t.onclose = done));
    await t.start();
    await closed;
    expect(JSON.parse(got[0])).toEqual(['yes', tmpdir()]);
  });

  it('delivers an oversized line from the child as a flagged prefix', async () => {
    const t = spawnStdioTransport(process.execPath, ['-e', "console.log('x'.repeat(100000)); console.log('{}')"]);
    t.setMaxFrameBytes(1000);
    const got: InboundFrame[] = [];
    t.onmessage = (f) => got.push(f);
    const closed = waitFor<CloseInfo>((done) => (t.onclose = done));
    await t.start();
    await closed;
    expect(got.map((f) => [f.bytes.byteLength, f.oversized, f.byteLength])).toEqual([
      [1001, true, 100000],
      [2, false, 2],
    ]);
  });
});
