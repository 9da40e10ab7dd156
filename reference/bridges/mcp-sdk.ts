/**
 * The loader of the MCP TypeScript SDK, an optional peer of the package (reference/peers.ts): the
 * bridges import its values from here alone, on first use, so a user without it never loads it.
 */
import { MissingPeerError, optionalImport } from '../peers.ts';

/** The MCP SDK's package, as package.json's peerDependencies name it. */
export const MCP_SDK_PEER = '@modelcontextprotocol/sdk@^1.32.2';

/** The parts of the SDK the MCP-server bridge uses: its client and the result schemas it checks answers with. */
export interface McpClientSdk {
  Client: typeof import('@modelcontextprotocol/sdk/client/index.js').Client;
  CallToolResultSchema: typeof import('@modelcontextprotocol/sdk/types.js').CallToolResultSchema;
  ListToolsResultSchema: typeof import('@modelcontextprotocol/sdk/types.js').ListToolsResultSchema;
}

/** Loads the SDK's client; throws MissingPeerError, naming the npm command, when the SDK is not installed. */
export async function loadMcpClient(what: string): Promise<McpClientSdk> {
  const [client, types] = await Promise.all([
    optionalImport(() => import('@modelcontextprotocol/sdk/client/index.js')),
    optionalImport(() => import('@modelcontextprotocol/sdk/types.js')),
  ]);
  if (!client || !types) throw new MissingPeerError(what, [MCP_SDK_PEER]);
  return { Client: client.Client, CallToolResultSchema: types.CallToolResultSchema, ListToolsResultSchema: types.ListToolsResultSchema };
}
