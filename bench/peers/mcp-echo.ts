/**
 * The MCP echo server used over stdio and in memory: tool `echo` returns its arguments as JSON
 * text. It is built on the SDK's `Server` with handlers for tools/list and tools/call (the SDK
 * still parses every request against its schema); like tap.test.echo, the tool declares no
 * argument schema of its own.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

/** A server offering the `echo` tool, not yet connected. */
export function createEchoServer(): Server {
  const server = new Server({ name: 'bench-echo', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [{ name: 'echo', description: 'Returns its arguments.', inputSchema: { type: 'object' } }],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    if (request.params.name !== 'echo') throw new Error(`no tool ${request.params.name}`);
    return { content: [{ type: 'text', text: JSON.stringify(request.params.arguments ?? {}) }] };
  });
  return server;
}
