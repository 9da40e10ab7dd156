/**
 * The MCP SDK's server side, an optional peer dependency (reference/peers.ts), loaded on first use
 * by the MCP facade: a user who never serves a TAP agent to MCP hosts never loads it. Without the
 * SDK the first use throws a MissingPeerError that names the npm command.
 */
import type * as TasksModule from '@modelcontextprotocol/sdk/experimental/tasks';
import type * as ServerModule from '@modelcontextprotocol/sdk/server/index.js';
import type * as StdioModule from '@modelcontextprotocol/sdk/server/stdio.js';
import type * as TypesModule from '@modelcontextprotocol/sdk/types.js';
import { MissingPeerError, optionalImport } from '../peers.ts';

/** The MCP SDK's package, as package.json's peerDependencies name it. */
export const MCP_SDK_PEER = '@modelcontextprotocol/sdk@^1.32.2';

/** What the facade takes from the MCP SDK. */
export interface McpServerSdk {
  Server: typeof ServerModule.Server;
  StdioServerTransport: typeof StdioModule.StdioServerTransport;
  types: typeof TypesModule;
  /** The queue of the messages (elicitations) a task-augmented call sends its host through tasks/result. */
  InMemoryTaskMessageQueue: typeof TasksModule.InMemoryTaskMessageQueue;
}

let sdk: McpServerSdk | undefined;

/** The MCP SDK's server, loaded on the first call; throws MissingPeerError when it is not installed. */
export async function loadMcpServerSdk(): Promise<McpServerSdk> {
  if (sdk !== undefined) return sdk;
  const [server, stdio, types, tasks] = await Promise.all([
    optionalImport(() => import('@modelcontextprotocol/sdk/server/index.js')),
    optionalImport(() => import('@modelcontextprotocol/sdk/server/stdio.js')),
    optionalImport(() => import('@modelcontextprotocol/sdk/types.js')),
    optionalImport(() => import('@modelcontextprotocol/sdk/experimental/tasks')),
  ]);
  if (server === undefined || stdio === undefined || types === undefined || tasks === undefined)
    throw new MissingPeerError('Serving a TAP agent as an MCP server', [MCP_SDK_PEER]);
  sdk = {
    Server: server.Server,
    StdioServerTransport: stdio.StdioServerTransport,
    types,
    InMemoryTaskMessageQueue: tasks.InMemoryTaskMessageQueue,
  };
  return sdk;
}
