/**
 * The reference agent as a hostile peer meets it, over its real bindings: frames built to exhaust
 * its stack, its tables or its memory are answered, and other sessions go on (spec: limits).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { connectWebSocket, spawnStdioTransport, type ChildStdioTransport } from '../transports/index.ts';
import { TestPeer } from './peer.testkit.ts';

const BIN = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../bin/tap-reference-agent.mjs');
const AGENT = 'tap.reference-agent';
const DEEP = `{"x":${'['.repeat(5000)}${']'.repeat(5000)}}`;
const stdioChildren: ChildStdioTransport[] = [];
const wsChildren: ChildProcess[] = [];

afterEach(() => {
  for (const t of stdioChildren.splice(0)) t.child?.kill('SIGKILL');
  for (const c of wsChildren.splice(0)) c.kill('SIGKILL');
});

function peerOn(transport: ChildStdioTransport | Awaited<ReturnType<typeof connectWebSocket>>): TestPeer {
  const peer = new TestPeer(transport);
  peer.target = AGENT;
  peer.timeoutMs = 15_000;
  return peer;
}

/** Starts the agent on WebSocket and resolves with its URL; `stderr` collects what it logs. */
async function listening(args: string[] = [], stderr?: (text: string) => void): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [BIN, '--listen', 'ws://127.0.0.1:0/tap', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  wsChildren.push(child);
  if (stderr) child.stderr!.on('data', (d: Buffer) => stderr(d.toString()));
  else child.stderr!.resume();
  const url = await new Promise<string>((ok, fail) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) ok(out.trim());
    });
    child.once('exit', (code) => fail(new Error(`the agent exited ${code}`)));
  });
  return { child, url };
}

describe('deep nesting (spec: limits#nesting)', () => {
  it('answers a 9 KB, 5 000-deep frame before the handshake on stdio with MALFORMED_MESSAGE and serves on', async () => {
    const transport = spawnStdioTransport(process.execPath, [BIN], { env: process.env, stderr: 'pipe', closeGraceMs: 5000 });
    stdioChildren.push(transport);
    const peer = peerOn(transport);
    peer.sendText(DEEP);
    const error = await peer.waitFor((m) => m.type === 'error');
    expect(error.payload).toMatchObject({ code: 'MALFORMED_MESSAGE', details: { reason: 'nesting', max_depth: 64 } });
    await peer.handshake({ requires: ['tap.test.echo'] });
    peer.request('e1', 'tap.test.echo', 'still here');
    expect((await peer.result('e1')).payload.output).toBe('still here');
    await transport.close();
    expect((await transport.exited).code).toBe(0);
  }, 40_000);

  it('answers it on WebSocket before the handshake, while another session on the same server goes on', async () => {
    const { child, url } = await listening();
    let exited: number | null | undefined;
    child.once('exit', (code) => (exited = code));
    const victim = peerOn(await connectWebSocket(url));
    await victim.handshake({ requires: ['tap.test.sleep'] });
    victim.request('v1', 'tap.test.sleep', { ms: 1500 });
    await victim.waitFor((m) => m.task_id === 'v1' && m.type === 'task.accepted');

    const attacker = peerOn(await connectWebSocket(url));
    attacker.sendText(DEEP);
    const error = await attacker.waitFor((m) => m.type === 'error');
    expect(error.payload).toMatchObject({ code: 'MALFORMED_MESSAGE', details: { reason: 'nesting' } });
    expect(attacker.closed).toBe(false);

    expect((await victim.result('v1')).payload).toMatchObject({ status: 'completed' });
    const ping = victim.send({ type: 'ping' });
    expect((await victim.reply(ping.message_id)).type).toBe('pong');
    const late = peerOn(await connectWebSocket(url));
    await late.handshake();
    expect(exited).toBeUndefined();
  }, 40_000);
});

/** The resident memory of a process now and at its peak, in KiB (Linux /proc). */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1]);
  return { rss: kib('VmRSS'), peak: kib('VmHWM') };
}

describe('a WebSocket peer that never reads (spec: limits#back-pressure)', () => {
  it.skipIf(process.platform !== 'linux')(
    'drops it once 16 MiB are unread: one line logged and a bounded peak, however much more it sends; others go on',
    async () => {
      let stderr = '';
      const { child, url } = await listening([], (text) => (stderr += text));
      const flooder = await connectWebSocket(url);
      const peer = peerOn(flooder);
      await peer.handshake();
      const before = memoryOf(child.pid!);
      // It stops reading, then sends 400 000 pings (about 100 MB): each would be answered with a pong it never takes.
      flooder.socket.pause();
      (flooder.socket as unknown as { _socket: { pause(): void } })._socket.pause();
      const frame = (i: number) => JSON.stringify(peer.build({ type: 'ping', payload: { i } }));
      for (let i = 0; i < 400_000 && flooder.socket.readyState === 1; i++) {
        flooder.socket.send(frame(i));
        if (i % 5000 === 4999) await new Promise((r) => setTimeout(r, 5));
      }
      await new Promise((r) => setTimeout(r, 2000));
      const after = memoryOf(child.pid!);
      expect(stderr.match(/bytes unread/g) ?? []).toHaveLength(1);
      // Before the bound bounded, the agent read on and peaked at 300–400 MB; now what it holds
      // is what 16 MiB of unsent pongs cost, whatever the flood.
      expect(after.peak - before.rss).toBeLessThan(160 * 1024);
      const other = peerOn(await connectWebSocket(url));
      await other.handshake();
      const ping = other.send({ type: 'ping' });
      expect((await other.reply(ping.message_id)).type).toBe('pong');
    },
    60_000,
  );
});
