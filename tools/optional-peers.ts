/** The rule of the optional peers: only their loaders import them for values (tools/import-graph.ts checks it). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { importsOf, listModules } from './module-imports.ts';

/**
 * The optional peer dependencies (reference/peers.ts) and the one module of the shipped folders
 * that may import each of them for its values: any other shipped module imports only their types,
 * so that a user without them can still run every stdio and WebSocket command.
 */
export const OPTIONAL_PEER_LOADERS: readonly { prefix: string; loader: string }[] = [
  { prefix: '@nats-io/', loader: 'reference/transports/nats/client.ts' },
  { prefix: 'json-schema-to-typescript', loader: 'reference/tapctl/gen-types/typescript.ts' },
  { prefix: '@modelcontextprotocol/sdk/server/', loader: 'reference/bridges/mcp-host-sdk.ts' },
  { prefix: '@modelcontextprotocol/sdk/types.js', loader: 'reference/bridges/mcp-host-sdk.ts' },
  { prefix: '@modelcontextprotocol/sdk/experimental/tasks', loader: 'reference/bridges/mcp-host-sdk.ts' },
  { prefix: '@a2a-js/sdk', loader: 'reference/bridges/a2a-sdk.ts' },
  { prefix: 'express', loader: 'reference/bridges/a2a-sdk.ts' },
  { prefix: '@modelcontextprotocol/sdk', loader: 'reference/bridges/mcp-sdk.ts' },

  { prefix: '@opentelemetry/', loader: 'reference/telemetry.ts' },
];

/** The shipped folders whose modules the optional-peer rule covers. */
const SHIPPED_FOLDERS = ['reference/', 'conformance/'];

/** Each value import of an optional peer by a shipped module other than that peer's loader. */
export function optionalPeerViolations(repoRoot: string): string[] {
  const found: string[] = [];
  for (const folder of SHIPPED_FOLDERS) {
    const root = join(repoRoot, folder);
    for (const inside of listModules(root, root, [])) {
      const path = folder + inside;
      if (path.endsWith('.testkit.ts')) continue;
      for (const { spec, typeOnly } of importsOf(inside, readFileSync(join(root, inside), 'utf8'), false)) {
        // A peer may have several loaders (one per bridge, say): any of them may import it.
        const loaders = OPTIONAL_PEER_LOADERS.filter((p) => spec.startsWith(p.prefix));
        const peer = loaders[0];
        if (peer !== undefined && !typeOnly && !loaders.some((p) => p.loader === path))
          found.push(`${path}: imports the optional peer ${spec} for its values; take them from ${peer.loader}`);
      }
    }
  }
  return found;
}
