/**
 * An agent written the documented way — a card and a handler passed to runAgent, nothing else —
 * run as a process from the compiled package: its command line, its bindings, the environment
 * tap-conform gives it and its signals (spec: shutdown#signals, shutdown#end-of-input).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { connectWs } from '../client/index.ts';
import { spawnStdioTransport, type ChildStdioTransport } from '../transports/index.ts';
import { TestPeer } from '../agent/peer.testkit.ts';

const dir = mkdtempSync(join(tmpdir(), 'tap-run-agent-'));
const AGENT = join(dir, 'agent.mjs');
writeFileSync(
  AGENT,
  `import { runAgent } from ${JSON.stringify(new URL('../../dist/lib/index.js', import.meta.url).pathname)};
await runAgent({
  card: {
    agent_id: 'example.word-counter',
    name: 'Word counter',
    description: 'Counts the words of a plain text.',
    capabilities: [],
    limits: { max_concurrent_tasks: 8, max_task_seconds: 60, max_message_bytes: 1048576 },
  },
  capabilities: {
    'text.word-count': {
      capability: { name: 'text.word-count', version: '1.0.0', description: 'Counts words.', input_formats: ['json'], output_formats: ['json'], streaming: false, side_effects: false },
      handler: async (input, ctx) => { await ctx.sleep(input.wait_ms ?? 0); return { words: input.text.split(/\\s+/).filter(Boolean).length }; },
    },
  },
});
`,
);

/** The same agent embedded the older way: createAgent and serveStdio, with no signal code of its own. */
const EMBEDDED = join(dir, 'embedded.mjs');
writeFileSync(
  EMBEDDED,
  `import { createAgent, withConformanceCapabilities } from ${JSON.stringify(new URL('../../dist/lib/agent.js', import.meta.url).pathname)};
const agent = createAgent({
  card: { agent_id: 'example.embedded', name: 'Embedded', description: 'Sleeps.', capabilities: [], limits: { max_concurrent_tasks: 8, max_task_seconds: 60, max_message_bytes: 1048576 } },
  capabilities: withConformanceCapabilities(),
});
await agent.serveStdio();
`,
);

const children: ChildStdioTransport[] = [];
afterEach(() => {
  for (const t of children.splice(0)) t.child?.kill('SIGKILL');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The agent over stdio, with `env` added to a clean environment (no TAP_* of the test's own). */
function stdio(env: NodeJS.ProcessEnv = {}, script = AGENT, args: string[] = []): { transport: ChildStdioTransport; peer: TestPeer } {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TAP_')));
  const transport = spawnStdioTransport(process.execPath, [script, ...args], {
    env: { ...base, ...env },
    stderr: 'pipe',
    closeGraceMs: 5000,
  });
  children.push(transport);
  const peer = new TestPeer(transport);
  peer.target = script === AGENT ? 'example.word-counter' : 'example.embedded';
  peer.timeoutMs = 15_000;
  return { transport, peer };
}

describe('an agent built with runAgent, run as a process', () => {
  it('prints its usage with every binding for --help, and refuses an unknown option with one line and exit 2', () => {
    const help = spawnSync(process.execPath, [AGENT, '--help'], { encoding: 'utf8' });
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Usage: agent\.mjs \[options\]/);
    for (const option of ['--listen URL', '--nats URL', '--durable', '--mesh URL', '--state-dir DIR', 'TAP_CONFORMANCE=1'])
      expect(help.stdout).toContain(option);
    const bad = spawnSync(process.execPath, [AGENT, '--colour'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toBe("agent.mjs: Unknown option '--colour'\nRun agent.mjs --help for usage.\n");
  });

  it('says that the agent could not start, without pointing at --help, when its own options are at fault', () => {
    const broken = join(dir, 'broken.mjs');
    writeFileSync(broken, readFileSync(AGENT, 'utf8').replace('handler: async (input, ctx) =>', 'handle: async (input, ctx) =>'));
    const run = spawnSync(process.execPath, [broken], { encoding: 'utf8', input: '' });
    expect(run.status).toBe(2);
    expect(run.stderr).toBe(
      'broken.mjs: the agent could not start: capability text.word-count has no handler: give it as { capability, handler }, handler a function\n',
    );
  });

  it('serves stdio, offers tap.test.* only with TAP_CONFORMANCE=1, and exits 0 with a farewell at the end of input', async () => {
    for (const [env, offersTests] of [
      [{}, false],
      [{ TAP_CONFORMANCE: '1' }, true],
    ] as const) {
      const { transport, peer } = stdio(env);
      const ack = await peer.handshake({ requires: ['text.word-count'] });
      const names = (ack.payload.agent as { capabilities: { name: string }[] }).capabilities.map((c) => c.name);
      expect(names.includes('tap.test.echo')).toBe(offersTests);
      peer.request('t1', 'text.word-count', { text: 'one two three' });
      expect((await peer.result('t1')).payload.output).toEqual({ words: 3 });
      await transport.close();
      expect((await transport.exited).code).toBe(0);
      expect(peer.received.at(-1)?.type).toBe('session.farewell');
    }
  }, 40_000);

  it('proposes the heartbeat of --heartbeat-ms, which a requester asking for the shortest gets (spec: limits#heartbeats)', async () => {
    for (const [args, final] of [
      [[], 15_000],
      [['--heartbeat-ms', '1000'], 1000],
    ] as const) {
      const { transport, peer } = stdio({}, AGENT, [...args]);
      const ack = await peer.handshake({ params: { heartbeat_ms: 1000 } });
      expect((ack.payload.params as { heartbeat_ms: number }).heartbeat_ms).toBe(final);
      await transport.close();
      expect((await transport.exited).code).toBe(0);
    }
  }, 40_000);

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`on ${signal} ends its running task SHUTTING_DOWN, says farewell and exits 0 (spec: shutdown#signals)`, async () => {
      const { transport, peer } = stdio();
      await peer.handshake({ requires: ['text.word-count'] });
      peer.request('long', 'text.word-count', { text: 'a b', wait_ms: 60_000 });
      await peer.waitFor((m) => m.task_id === 'long' && m.type === 'task.event');
      transport.child?.kill(signal);
      expect((await transport.exited).code).toBe(0);
      expect(peer.stream('long').at(-1)?.payload).toMatchObject({ status: 'cancelled', error: { code: 'SHUTTING_DOWN' } });
      expect(peer.received.at(-1)?.type).toBe('session.farewell');
    }, 40_000);
  }

  it('embedded with createAgent and serveStdio, still shuts down on SIGTERM and exits 0 (spec: shutdown#signals)', async () => {
    const { transport, peer } = stdio({}, EMBEDDED);
    await peer.handshake({ requires: ['tap.test.sleep'] });
    peer.request('long', 'tap.test.sleep', { ms: 60_000 });
    await peer.waitFor((m) => m.task_id === 'long' && m.type === 'task.event');
    transport.child?.kill('SIGTERM');
    expect((await transport.exited).code).toBe(0);
    expect(peer.stream('long').at(-1)?.payload).toMatchObject({ status: 'cancelled', error: { code: 'SHUTTING_DOWN' } });
  }, 40_000);

  it('serves WebSocket with --listen, prints its URL, and exits 0 on SIGTERM', async () => {
    const child = spawn(process.execPath, [AGENT, '--listen', 'ws://127.0.0.1:0/tap'], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.once('data', (d: Buffer) => resolve(d.toString().trim()));
        child.once('exit', (code) => reject(new Error(`the agent exited with ${code}`)));
      });
      expect(url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/tap$/);
      const client = await connectWs(url, { agentId: 'example.requester', requires: ['text.word-count'] });
      expect((await client.submit('text.word-count', { text: 'x y' }).result).output).toEqual({ words: 2 });
      await client.close();
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  }, 40_000);
});
