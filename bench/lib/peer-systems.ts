/**
 * The peers a round trip is set beside, behind the System interface of systems.ts: the MCP
 * TypeScript SDK (tools/call of an echo tool, over stdio and in memory) and vscode-jsonrpc (an echo
 * request over stdio).
 */
import { spawn } from 'node:child_process';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node.js';
import { createEchoServer } from '../peers/mcp-echo.ts';
import { nodeArgs, within } from './children.ts';
import type { Call } from './measure.ts';
import { peer, ROOT } from './paths.ts';
import { closeWithin, echoInput, type System } from './systems.ts';

function mcpSystem(client: McpClient, pid: number | undefined, close: () => Promise<void>): System {
  return {
    id: 'mcp',
    name: `MCP TypeScript SDK (tools/call echo)`,
    pid,
    call: (i) => client.callTool({ name: 'echo', arguments: echoInput(i) }),
    close,
  };
}

/** The MCP SDK over stdio: its server in a child process, its client here. */
export async function mcpStdio(): Promise<System> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: nodeArgs(peer('mcp-server.ts')),
    cwd: ROOT,
    stderr: 'pipe',
  });
  const client = new McpClient({ name: 'bench', version: '1.0.0' });
  await client.connect(transport);
  return mcpSystem(client, transport.pid ?? undefined, () => closeWithin('the MCP client', () => client.close()));
}

/** The MCP SDK over its in-memory transport pair, server and client in this process. */
export async function mcpMemory(): Promise<System> {
  const [clientEnd, serverEnd] = InMemoryTransport.createLinkedPair();
  const server = createEchoServer();
  await server.connect(serverEnd);
  const client = new McpClient({ name: 'bench', version: '1.0.0' });
  await client.connect(clientEnd);
  return mcpSystem(client, undefined, async () => {
    await closeWithin('the MCP client', () => client.close());
    await closeWithin('the MCP server', () => server.close());
  });
}

/** vscode-jsonrpc over stdio (Content-Length framing): its server in a child process. */
export async function jsonrpcStdio(): Promise<System> {
  const child = spawn(process.execPath, nodeArgs(peer('jsonrpc-server.ts')), { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  child.on('error', () => {});
  child.stderr.resume();
  const connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  connection.listen();
  const call: Call = (i) => connection.sendRequest('echo', echoInput(i));
  await within(call(0), 30_000, 'the vscode-jsonrpc child answering');
  return {
    id: 'jsonrpc',
    name: 'vscode-jsonrpc (echo request)',
    pid: child.pid,
    call,
    async close() {
      connection.dispose();
      child.kill('SIGKILL');
    },
  };
}
