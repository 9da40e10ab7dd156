/**
 * How the `tapctl mesh` commands reach the registry: `--nats URL` or `--server URL` (server-url.ts),
 * the NATS client and the registry module loaded only when a mesh command runs (spec: registry#nats);
 * `--trust FILE` to take only signed entries (spec: registry#signatures), and the bounds of a
 * listing (spec: registry#bounds).
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { MissingPeerError } from '../../peers.ts';
import type { DiscoveryQuery, RegistryRecord } from '../../mesh/entry.ts';
import type { Listing, ListingBounds, Refusal } from '../../mesh/listing.ts';
import type { Registry } from '../../mesh/registry.ts';
import { readTrustFile, type TrustFile } from '../../trust.ts';
import type { Io } from '../registry.ts';
import { CliError } from '../registry.ts';
import { DEFAULT_NATS_URL, natsServerUrl, SERVER_OPTIONS } from '../server-url.ts';
import { duration, table } from '../workspace/format.ts';

/** The options every mesh command that reads the registry takes. */
export const NATS_OPTION = {
  ...SERVER_OPTIONS,
  trust: { type: 'string' },
  'max-entries': { type: 'string' },
  'budget-ms': { type: 'string' },
} as const;

/** The help lines of those options. */
export const NATS_HELP = `  --nats URL   the NATS server of the mesh's registry, also -s, --server URL (default: $TAP_NATS_URL,
               else $NATS_URL, else ${DEFAULT_NATS_URL})
  --trust FILE take only entries signed by their agent's key in this trust file and show the
               others as refused, with the reason (spec: registry#signatures); without it, every
               process that may write the registry bucket is trusted
  --max-entries N
               read at most N keys of the bucket (default 10000)
  --budget-ms MS
               spend at most MS reading the bucket (default 5000); a listing cut short by either
               bound says so on stderr`;

/** What --trust, --max-entries and --budget-ms ask of a listing. */
export interface ListingOptions {
  trust?: TrustFile;
  bounds: ListingBounds;
}

/** Reads --trust, --max-entries and --budget-ms, refusing what cannot be used. */
export function listingOptions(values: { trust?: string; 'max-entries'?: string; 'budget-ms'?: string }): ListingOptions {
  const whole = (name: 'max-entries' | 'budget-ms', min: number): number | undefined => {
    const raw = values[name];
    if (raw === undefined) return undefined;
    if (!/^\d+$/.test(raw) || Number(raw) < min)
      throw new CliError(`--${name} ${raw} is not a whole number of at least ${min}`, { usage: true });
    return Number(raw);
  };
  const maxEntries = whole('max-entries', 1);
  const budgetMs = whole('budget-ms', 1);
  let trust: TrustFile | undefined;
  if (values.trust !== undefined) {
    try {
      trust = readTrustFile(values.trust);
    } catch (err) {
      throw new CliError((err as Error).message, {
        where: values.trust,
        hint: 'Give the trust file of the mesh: {"principals": {"<agent id>": {"public_key": "…"}}}.',
      });
    }
  }
  return {
    ...(trust ? { trust } : {}),
    bounds: { ...(maxEntries !== undefined ? { maxEntries } : {}), ...(budgetMs !== undefined ? { budgetMs } : {}) },
  };
}

/** Opens the registry bucket (never creating it), runs `use`, and closes the connection. */
export async function withRegistry<T>(
  options: { server?: string; nats?: string },
  use: (registry: Registry) => Promise<T>,
  listing: ListingOptions = { bounds: {} },
): Promise<T> {
  const server = natsServerUrl(options);
  if (!/^(nats|tls):\/\//i.test(server))
    throw new CliError(`the NATS server ${server} is not a nats:// URL`, { usage: true, hint: 'Give one like nats://127.0.0.1:4222.' });
  const [{ connect }, { openRegistry }, { natsClientOptions, parseNatsUrl }] = await Promise.all([
    import('../../transports/nats/client.ts'),
    import('../../mesh/registry.ts'),
    import('../../transports/nats/url.ts'),
  ]);
  const address = parseNatsUrl(server);
  let nc: NatsConnection;
  try {
    nc = await connect({
      ...natsClientOptions(address),
      name: 'tapctl mesh',
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
      registry = await openRegistry(nc, { create: false, listing: listing.bounds, ...(listing.trust ? { trust: listing.trust } : {}) });
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

/** Lists the live entries a query matches, within the listing bounds, refusing an unreadable range as a usage error (TAP-REG-036). */
export async function listMatching(registry: Registry, query: DiscoveryQuery): Promise<Listing> {
  try {
    const listing = await registry.survey(query);
    listing.records.sort((a, b) => a.entry.agent_id.localeCompare(b.entry.agent_id));
    listing.refused.sort((a, b) => a.agentId.localeCompare(b.agentId));
    return listing;
  } catch (err) {
    if (err instanceof RangeError) throw new CliError(err.message, { usage: true });
    throw err;
  }
}

/** The most refused values printed. */
const REFUSALS_SHOWN = 20;

/** The refused values, for people: a line each, the first few only (spec: registry#signatures). */
export function refusedText(refused: readonly Refusal[], trust: boolean): string {
  if (refused.length === 0) return '';
  const n = refused.length;
  const why = trust ? "invalid, or not signed by the agent's key in the trust file" : 'not valid entries';
  const rows = refused
    .slice(0, REFUSALS_SHOWN)
    .map((r) => [r.agentId, r.entry ? `instance ${r.entry.instance}` : '', r.entry?.endpoints.map((p) => p.url).join(' ') || '', r.reason]);
  const more = refused.length > REFUSALS_SHOWN ? `  … and ${refused.length - REFUSALS_SHOWN} more\n` : '';
  return `\n${n} ${n === 1 ? 'value' : 'values'} refused (${why}); requesters take ${n === 1 ? 'it' : 'them'} as absent:\n${table(rows)}${more}`;
}

/** Says on stderr that a listing stopped at a bound, and what to do. */
export function warnTruncated(io: Io, listing: Listing, trust: boolean): void {
  if (!listing.truncated) return;
  const missing = trust
    ? 'every agent of the trust file was read directly, but untrusted values beyond them were not read'
    : 'agents beyond them may be missing';
  io.err(
    `tapctl: the listing was cut short after ${listing.read} values (${listing.truncated}): ${missing}. Raise --max-entries or --budget-ms${trust ? '' : ", or give --trust FILE to read the trusted agents' keys directly"}, and find who writes so many keys.\n`,
  );
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
