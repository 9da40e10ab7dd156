/** The bridges between TAP and MCP or A2A (spec: bridge-mcp-host, bridge-a2a); each loads its SDK, an optional peer, on first use. */
export { createMcpHost, serveMcpHostOverStdio } from './mcp-host.ts';
export type { McpHost, McpHostOptions } from './mcp-host.ts';
export { serveA2a, TapA2aHandler } from './a2a-server.ts';
export type { A2aFacade, A2aFacadeOptions } from './a2a-server.ts';
export { connectTarget } from './tap-target.ts';
export type { TapTarget } from './tap-target.ts';
