/**
 * tap-bridge as users run it (dist/ built): `mcp-server` spawned by the MCP SDK's stdio client in
 * front of the reference agent (a plain call and an MCP task), and `a2a` on a free port called by @a2a-js/sdk's client; each
 * stops when its client goes, leaving no process behind (spec: bridge-mcp-host, bridge-a2a).
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Role } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const BRIDGE = join(ROOT, 'bin', 'tap-bridge.mjs');
const AGENT = join(ROOT, 'dist', 'reference', 'agents', 'reference-agent.js');

const stops: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop().catch(() => {});
});

/** The pids of the processes whose parent is `pid` (Linux /proc). */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .flatMap((d) => {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid ? [Number(d)] : [];
      } catch {
        return [];
      }
    });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('tap-bridge (spec: bridge-mcp-host, bridge-a2a)', () => {
  it('mcp-server: the MCP SDK client lists the tools and calls one with progress; closing stdin stops the bridge and its agent', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BRIDGE, 'mcp-server', '--', process.execPath, AGENT],
      stderr: 'pipe',
    });
    const mcp = new Client({ name: 'test-host', version: '1.0.0' });
    await mcp.connect(transport);
    stops.push(() => mcp.close());
    const bridge = transport.pid!;
    const agents = childrenOf(bridge);
    expect(agents).toHaveLength(1);
    const { tools } = await mcp.listTools();
    expect(tools.map((t) => t.name)).toContain('tap.test.stream');
    // The progress notifications as they arrive, before the SDK dispatches them: its client (1.32)
    // runs a notification's handler a microtask late, after a response read in the same chunk has
    // removed the call's progress handler, so on a loaded machine onprogress can miss the last one.
    const progress: string[] = [];
    const dispatch = transport.onmessage!;
    transport.onmessage = (message) => {
      const m = message as { method?: string; params?: { message?: string } };
      if (m.method === 'notifications/progress') progress.push(m.params?.message ?? '');
      dispatch(message);
    };
    const result = await mcp.callTool({ name: 'tap.test.stream', arguments: { input: { count: 2 } } }, undefined, {
      onprogress: () => {},
    });
    expect(result.structuredContent).toEqual({ count: 2 });
    expect(progress.filter((m) => m.startsWith('output: '))).toEqual(['output: {"index":0}', 'output: {"index":1}']);
    // The same call as an MCP task (spec: bridge-mcp-host#mcp-tasks): created at once, polled, its result read with tasks/result.
    const seen: string[] = [];
    for await (const m of mcp.experimental.tasks.callToolStream({ name: 'tap.test.stream', arguments: { input: { count: 2 } } })) {
      seen.push(m.type === 'result' ? JSON.stringify(m.result.structuredContent) : m.type === 'error' ? m.error.message : m.task.status);
    }
    expect(seen[0]).toBe('working');
    expect(seen.at(-1)).toBe('{"count":2}');
    await mcp.close();
    await expect.poll(() => alive(bridge) || agents.some(alive), { timeout: 15_000 }).toBe(false);
  });

  it('a2a: serves the card on the port it prints, answers a message through @a2a-js/sdk, and stops on SIGTERM with its agent', async () => {
    const child = spawn(process.execPath, [BRIDGE, 'a2a', '--port', '0', '--', process.execPath, AGENT], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    stops.push(async () => {
      child.kill('SIGKILL');
      await exited;
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    await expect.poll(() => /at (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out), { timeout: 15_000 }).not.toBeNull();
    const url = /at (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out)![1]!;
    const agents = childrenOf(child.pid!);
    const client = await new ClientFactory().createFromUrl(url);
    const task = (await client.sendMessage({
      tenant: '',
      message: {
        messageId: 'bins-1',
        contextId: '',
        taskId: '',
        role: Role.ROLE_USER,
        parts: [
          {
            content: { $case: 'data', value: { capability: 'tap.test.echo', input: { hello: 'A2A' } } },
            metadata: undefined,
            filename: '',
            mediaType: '',
          },
        ],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: undefined,
      metadata: undefined,
    })) as { artifacts: Array<{ name: string; parts: Array<{ content?: unknown }> }> };
    expect(task.artifacts.find((a) => a.name === 'result')!.parts[0]!.content).toEqual({ $case: 'data', value: { hello: 'A2A' } });
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    await expect.poll(() => agents.some(alive), { timeout: 15_000 }).toBe(false);
  });

  it('says what is wrong and what to do when no agent is given, and lists the subcommands', async () => {
    const run = (args: string[]) =>
      new Promise<{ code: number | null; err: string; out: string }>((resolve) => {
        const c = spawn(process.execPath, [BRIDGE, ...args]);
        let err = '';
        let out = '';
        c.stderr.on('data', (d: Buffer) => (err += d.toString()));
        c.stdout.on('data', (d: Buffer) => (out += d.toString()));
        c.once('exit', (code) => resolve({ code, err, out }));
      });
    const none = await run(['a2a', '--port', '0']);
    expect(none.code).toBe(2);
    expect(none.err).toMatch(/no TAP agent: give --url ws:\/\/.*, --mesh nats:\/\/host:port, or its command after --/);
    const notMesh = await run(['a2a', '--port', '0', '--capability', 'tap.test.echo', '--', 'true']);
    expect(notMesh.code).toBe(2);
    expect(notMesh.err).toMatch(/--capability goes with --mesh/);
    const help = await run(['--help']);
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/tap-bridge mcp-server .*\n.*\n\s+tap-bridge a2a /);
  });
});
