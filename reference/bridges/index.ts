/**
 * The bridges between TAP and MCP or A2A, and the tap-bridge command (spec: bridge-mcp-server,
 * bridge-mcp-host, bridge-a2a); each bridge loads its SDK, an optional peer, on first use.
 */
export { main as runBridge, SUBCOMMANDS, usage as bridgeUsage } from './cli.ts';
export { createMcpHost, serveMcpHostOverStdio } from './mcp-host.ts';
export type { McpHost, McpHostOptions } from './mcp-host.ts';
export { serveA2a, TapA2aHandler } from './a2a-server.ts';
export type { A2aFacade, A2aFacadeOptions } from './a2a-server.ts';
export { connectTarget } from './tap-target.ts';
export type { TapTarget } from './tap-target.ts';
export { startMcpBridge } from './mcp-agent.ts';
export type { McpBridge, McpBridgeOptions } from './mcp-agent.ts';
export * from './mcp-mapping.ts';
export { DEFAULT_CLOSE_WAITS, McpProcess, serverEnvironment } from './mcp-process.ts';
export type { CloseWaits, McpExit, McpServerCommand } from './mcp-process.ts';
