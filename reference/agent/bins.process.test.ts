import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { checkSignature } from '../core/index.ts';
import { hmacSha256 } from '../crypto.ts';
import { connectWebSocket, spawnStdioTransport, type ChildStdioTransport } from '../transports/index.ts';
import { REQUESTER_ID, TEST_KEY, TEST_KEY_BYTES, TestPeer, expectCleanHistories } from './peer.testkit.ts';

afterEach(expectCleanHistories);

const BIN = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../bin/tap-reference-agent.mjs');
const AGENT = 'tap.reference-agent';
const children: ChildStdioTransport[] = [];
const dirs: string[] = [];

function start(args: string[] = [], env: NodeJS.ProcessEnv = {}): { transport: ChildStdioTransport; peer: TestPeer } {
  const transport = spawnStdioTransport(process.execPath, [BIN, ...args], {
    env: { ...process.env, ...env },
    stderr: 'pipe',
    closeGraceMs: 5000,
  });
  children.push(transport);
  const peer = new TestPeer(transport);
  peer.target = AGENT;
  peer.timeoutMs = 15_000;
  return { transport, peer };
}

afterEach(() => {
  for (const t of children.splice(0)) t.child?.kill('SIGKILL');
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('tap-reference-agent', () => {
  it('serves a session on stdio: handshake, echo, and exit 0 with a farewell at end of input (spec: bindings-stdio#lifecycle)', async () => {
    const { transport, peer } = start();
    const ack = await peer.handshake({ requires: ['tap.test.echo'] });
    expect(ack.payload.agent.agent_id).toBe(AGENT);
    expect(ack.payload.granted).toEqual(['tap.test.echo']);
    peer.request('e1', 'tap.test.echo', { hi: 'there' });
    expect((await peer.result('e1')).payload.output).toEqual({ hi: 'there' });
    peer.request('s1', 'tap.test.sleep', { ms: 60_000 });
    await peer.waitFor((m) => m.task_id === 's1' && m.sequence === 2);
    await transport.close();
    const exit = await transport.exited;
    expect(exit.code).toBe(0);
    expect(peer.received.at(-1)?.type).toBe('session.farewell');
    expect(peer.stream('s1').at(-1)?.payload).toMatchObject({ status: 'cancelled', error: { code: 'SHUTTING_DOWN' } });
    expect(peer.violations(true)).toEqual([]);
  }, 40_000);

  it('holds the key from TAP_HMAC_* and signs its messages (spec: conformance#key-provisioning)', async () => {
    const { transport, peer } = start([], { TAP_HMAC_KEY_ID: 'k1', TAP_HMAC_KEY: TEST_KEY, TAP_HMAC_PEER: REQUESTER_ID });
    peer.key = { keyId: 'k1', key: TEST_KEY_BYTES };
    await peer.handshake({ params: { integrity: { alg: 'hmac-sha256', key_id: 'k1' } } });
    peer.request('e1', 'tap.test.echo', 1);
    await peer.result('e1');
    for (const m of peer.received) expect(checkSignature(m, TEST_KEY_BYTES, hmacSha256, 'k1')).toBe('ok');
    await transport.close();
    expect((await transport.exited).code).toBe(0);
  }, 40_000);

  it('finds its task again after SIGKILL and a restart with --state-dir (spec: tasks#durability)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-crash-'));
    dirs.push(dir);
    const first = start(['--state-dir', dir]);
    const ack = await first.peer.handshake();
    expect(ack.payload.agent.durability).toBe('restart');
    first.peer.request('slow', 'tap.test.sleep', { ms: 1500 });
    await first.peer.waitFor((m) => m.task_id === 'slow' && m.sequence === 2);
    first.transport.child!.kill('SIGKILL');
    expect((await first.transport.exited).signal).toBe('SIGKILL');

    const second = start(['--state-dir', dir]);
    const init = second.peer.init({
      resume: { session_id: first.peer.sessionId, resume_token: first.peer.resumeToken, tasks: [{ task_id: 'slow', last_sequence: 2 }] },
    });
    const ack2 = await second.peer.reply(init.message_id, 10_000);
    expect(ack2.payload).toMatchObject({ resumed: true, session_id: first.peer.sessionId });
    second.peer.sessionId = ack2.payload.session_id;
    const ready = second.peer.send({ type: 'handshake.ready', payload: { params: ack2.payload.params } });
    await second.peer.reply(ready.message_id);
    const status = second.peer.send({ type: 'task.status', task_id: 'slow' });
    expect((await second.peer.reply(status.message_id)).payload.capability).toBe('tap.test.sleep');
    const result = await second.peer.result('slow', 10_000);
    expect(result).toMatchObject({ sequence: 3, payload: { status: 'completed', output: { slept_ms: 1500 } } });
    await second.transport.close();
    expect((await second.transport.exited).code).toBe(0);
  }, 40_000);

  it('listens on WebSocket with --listen, prints the URL, and exits 0 on SIGTERM after its farewell (spec: shutdown#signals)', async () => {
    const child = spawn(process.execPath, [BIN, '--listen', 'ws://127.0.0.1:0/tap'], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('\n')) resolve(out.trim());
        });
        child.once('exit', (code) => reject(new Error(`exited ${code}`)));
      });
      expect(url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/tap$/);
      const peer = new TestPeer(await connectWebSocket(url));
      peer.target = AGENT;
      peer.timeoutMs = 15_000;
      await peer.handshake();
      peer.request('s1', 'tap.test.sleep', { ms: 60_000 });
      await peer.waitFor((m) => m.task_id === 's1' && m.sequence === 2);
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      await peer.until(() => peer.closed);
      expect(peer.stream('s1').map((m) => m.type)).toEqual(['task.accepted', 'task.event', 'task.handoff', 'task.event', 'task.result']);
      expect(peer.received.at(-1)?.type).toBe('session.farewell');
    } finally {
      child.kill('SIGKILL');
    }
  }, 40_000);

  it('explains a bad option in one line and exits 2', async () => {
    const child = spawn(process.execPath, [BIN, '--listen', 'http://x'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(2);
    expect(err).toMatch(/^tap-reference-agent: --listen needs a ws:\/\/ or wss:\/\/ URL/);
  }, 40_000);
});
