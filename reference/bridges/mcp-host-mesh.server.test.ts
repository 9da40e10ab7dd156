/**
 * tap-bridge mcp-server --mesh as users run it (dist/ built): the MCP SDK's stdio client lists the
 * capabilities of the live agents of a mesh on a real nats-server as tools, sees a tool appear when
 * an agent joins, and calls and cancels through mesh tasks routed to the agents that offer them
 * (spec: bridge-mcp-host#mesh).
 */
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it } from 'vitest';
import type { TaskContext } from '../agent/index.ts';
import { joinMesh } from '../mesh/join.ts';
import { meshTestBed, testCapability } from '../mesh/mesh.testkit.ts';
import { NO_NATS_SERVER, natsServerInstalled } from '../transports/nats/nats-server.testkit.ts';

const BRIDGE = join(import.meta.dirname, '..', '..', 'bin', 'tap-bridge.mjs');

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

describe.skipIf(!natsServerInstalled)('tap-bridge mcp-server --mesh (spec: bridge-mcp-host#mesh)', () => {
  const bed = meshTestBed();

  /** The text of a tool result's first content block, parsed. */
  const textOf = (result: Awaited<ReturnType<Client['callTool']>>): unknown =>
    JSON.parse((result.content as Array<{ type: string; text: string }>)[0]!.text);

  it('lists the live capabilities it was asked for as tools, follows agents joining, calls and cancels through mesh tasks, cancels a task that asks for input', async () => {
    const first = await bed.agent('mesh.first');
    await joinMesh(first.agent, { url: bed.url(), heartbeatMs: 200 });

    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BRIDGE, 'mcp-server', '--mesh', bed.url(), '--capability', 'tap.test.echo,tap.test.sleep,tap.test.ask,demo.whoami'],
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const mcp = new Client({ name: 'test-host', version: '1.0.0' });
    await mcp.connect(transport);
    try {
      // Only the names asked for, and only those a live agent offers; the missing one is said.
      expect((await mcp.listTools()).tools.map((t) => t.name).sort()).toEqual(['tap.test.ask', 'tap.test.echo', 'tap.test.sleep']);
      expect(stderr).toMatch(/no live agent in the mesh offers demo\.whoami yet/);

      // A second agent joins with a capability of its own: the next listing has it.
      const second = await bed.agent('mesh.second', {
        'demo.whoami': {
          capability: testCapability('demo.whoami', 'Says which agent ran the task.'),
          handler: async (_input: unknown, ctx: TaskContext) => ({ agent: 'mesh.second', task: ctx.taskId }),
        },
      });
      await joinMesh(second.agent, { url: bed.url(), heartbeatMs: 200 });
      await expect
        .poll(async () => (await mcp.listTools()).tools.map((t) => t.name), { timeout: 10_000, interval: 100 })
        .toContain('demo.whoami');

      // Each call is a mesh task sent to an agent that offers the capability (a capability without an object schema takes { input }).
      const echoed = await mcp.callTool({ name: 'tap.test.echo', arguments: { input: { text: 'through the mesh' } } });
      expect(echoed.isError).toBeFalsy();
      expect(echoed.structuredContent ?? textOf(echoed)).toEqual({ text: 'through the mesh' });
      const who = await mcp.callTool({ name: 'demo.whoami', arguments: { input: {} } });
      expect(who.isError).toBeFalsy();
      expect((who.structuredContent ?? textOf(who)) as { agent: string }).toMatchObject({ agent: 'mesh.second' });

      // No input request reaches the MCP client over a mesh: the task is cancelled and the call says why.
      const asked = await mcp.callTool({ name: 'tap.test.ask', arguments: { input: { schema: { type: 'string' } } } });
      expect(asked.isError).toBe(true);
      expect((asked.content as Array<{ text: string }>)[0]!.text, JSON.stringify(asked)).toMatch(
        /^cancelled: .*asked for input.*over a mesh/,
      );

      // notifications/cancelled becomes a cancel of the mesh task on the agent that runs it.
      const running = () => first.agent.stats().activeTasks + second.agent.stats().activeTasks;
      const controller = new AbortController();
      const sleeping = mcp.callTool({ name: 'tap.test.sleep', arguments: { input: { ms: 60_000 } } }, undefined, {
        signal: controller.signal,
      });
      await expect.poll(running, { timeout: 10_000, interval: 50 }).toBe(1);
      controller.abort('the user gave up');
      await expect(sleeping).rejects.toThrow();
      await expect.poll(running, { timeout: 10_000, interval: 50 }).toBe(0);
    } finally {
      await mcp.close();
    }
  }, 60_000);
});
