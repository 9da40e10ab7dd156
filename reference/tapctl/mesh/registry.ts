/**
 * How the `tapctl mesh` commands reach the registry: `--nats URL` (or TAP_NATS_URL), the NATS
 * client and the registry module loaded only when a mesh command runs (spec: registry#nats).
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { MissingPeerError } from '../../peers.ts';
import type { DiscoveryQuery, RegistryRecord } from '../../mesh/entry.ts';
import type { Registry } from '../../mesh/registry.ts';
import { CliError } from '../registry.ts';
import { duration } from '../workspace/format.ts';

/** The `--nats` option every mesh command takes. */
export const NATS_OPTION = { nats: { type: 'string' } } as const;

/** The help lines of `--nats`. */
export const NATS_HELP = `  --nats URL   the NATS server of the mesh's registry (default: $TAP_NATS_URL, else nats://127.0.0.1:4222)`;

/** Opens the registry bucket (never creating it), runs `use`, and closes the connection. */
export async function withRegistry<T>(url: string | undefined, use: (registry: Registry) => Promise<T>): Promise<T> {
  const server = url ?? process.env.TAP_NATS_URL ?? 'nats://127.0.0.1:4222';
  if (!/^(nats|tls):\/\//i.test(server))
    throw new CliError(`--nats ${server} is not a nats:// URL`, { usage: true, hint: 'Give one like nats://127.0.0.1:4222.' });
  const [{ connect }, { openRegistry }, { parseNatsUrl }] = await Promise.all([
    import('../../transports/nats/client.ts'),
    import('../../mesh/registry.ts'),
    import('../../transports/nats/url.ts'),
  ]);
  const address = parseNatsUrl(server);
  let nc: NatsConnection;
  try {
    nc = await connect({
      servers: address.servers,
      name: 'tapctl mesh',
      ...(address.user !== undefined ? { user: address.user, pass: address.pass } : {}),
    });
  } catch (err) {
    if (err instanceof MissingPeerError) throw err;
    throw new CliError(`cannot reach the NATS server at ${address.servers.join(',')}: ${(err as Error).message}`, {
      code: 'UNREACHABLE',
      hint: 'Check the URL, or start the server (nats-server -js).',
    });
  }
  try {
    let registry: Registry;
    try {
      registry = await openRegistry(nc, { create: false });
    } catch (err) {
      throw new CliError(`the server at ${server} holds no mesh registry: ${(err as Error).message}`, {
        code: 'NO_REGISTRY',
        hint: 'No agent has joined a mesh there yet: start one with tap-reference-agent --mesh URL.',
      });
    }
    return await use(registry);
  } finally {
    await nc.close().catch(() => {});
  }
}

/** Lists the live entries a query matches, refusing an unreadable range as a usage error (TAP-REG-036). */
export async function listMatching(registry: Registry, query: DiscoveryQuery): Promise<RegistryRecord[]> {
  try {
    return (await registry.list(query)).sort((a, b) => a.entry.agent_id.localeCompare(b.entry.agent_id));
  } catch (err) {
    if (err instanceof RangeError) throw new CliError(err.message, { usage: true });
    throw err;
  }
}

/** One record as `--json` prints it: the entry, its revision, write time and remaining lifetime. */
export function recordJson(r: RegistryRecord, now = Date.now()): Record<string, unknown> {
  return {
    ...r.entry,
    revision: r.revision,
    written_at: r.writtenAt.toISOString(),
    expires_in_ms: Math.max(0, r.writtenAt.getTime() + r.entry.ttl_ms - now),
  };
}

/** A record's table row: id, load, age of the last write, lifetime left, endpoints. */
export function recordRow(r: RegistryRecord, now = Date.now()): string[] {
  const e = r.entry;
  const age = now - r.writtenAt.getTime();
  return [
    e.agent_id,
    `${e.load.running_tasks}/${e.load.max_concurrent_tasks} tasks`,
    `renewed ${duration(Math.max(0, age))} ago`,
    `expires in ${duration(Math.max(0, e.ttl_ms - age))}`,
    e.endpoints.map((p) => p.url).join(' ') || '(no endpoint)',
  ];
}
