/** Bridges between TAP and other protocols: an MCP server as a TAP agent (spec: bridge-mcp-server), and the tap-bridge command. */
export { bridgeUsage, runBridge, SUBCOMMANDS } from './cli.ts';
export { startMcpBridge } from './mcp-agent.ts';
export type { McpBridge, McpBridgeOptions } from './mcp-agent.ts';
export * from './mcp-mapping.ts';
export { DEFAULT_CLOSE_WAITS, McpProcess, serverEnvironment } from './mcp-process.ts';
export type { CloseWaits, McpExit, McpServerCommand } from './mcp-process.ts';
