/** An MCP server over stdio with the `echo` tool (the MCP peer of tap.test.echo). */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createEchoServer } from './mcp-echo.ts';

await createEchoServer().connect(new StdioServerTransport());
process.on('SIGTERM', () => process.exit(0));
