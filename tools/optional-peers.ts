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
        const peer = OPTIONAL_PEER_LOADERS.find((p) => spec.startsWith(p.prefix));
        if (peer !== undefined && !typeOnly && path !== peer.loader)
          found.push(`${path}: imports the optional peer ${spec} for its values; take them from ${peer.loader}`);
      }
    }
  }
  return found;
}
