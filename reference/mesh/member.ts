/**
 * An agent's membership of a mesh: it joins the registry under its agent id, renews its entry
 * with heartbeats, moves its load figures as tasks start and finish (sampled, so that a burst of
 * changes travels in one write), and withdraws the entry when it leaves (spec: registry#instances,
 * registry#heartbeats, registry#load, registry#withdrawal).
 */
import { randomBytes } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { connect } from '../transports/nats/client.ts';
import type { AgentCard } from '../../schemas/src/index.ts';
import { parseNatsUrl } from '../transports/nats/url.ts';
import { isLive, MIN_HEARTBEAT_MS, type RegistryEndpoint, type RegistryEntry } from './entry.ts';
import { openRegistry, type OpenRegistryOptions, type Registry } from './registry.ts';

/** The default heartbeat, in ms (spec: registry#heartbeats). */
export const DEFAULT_HEARTBEAT_MS = 5_000;

/** Where the registry is and how often to renew the entry. */
export interface MeshOptions {
  /** A nats:// URL of the registry's server (credentials may be in it); or give `nc`. */
  url?: string;
  /** An open NATS connection to use instead of `url`; leaving does not close it. */
  nc?: NatsConnection;
  /** How often the entry is renewed, in ms (default 5000, at least 100). */
  heartbeatMs?: number;
  /** How long the entry lives after its last write, in ms (default 3 × heartbeatMs). */
  ttlMs?: number;
  /** The registry bucket and whether to create it (default TAP_REGISTRY, created when missing). */
  registry?: OpenRegistryOptions;
}

/** What the agent tells its membership about itself, read at every write. */
export interface MemberSource {
  card: AgentCard;
  versions: readonly string[];
  /** Where the agent accepts sessions now (spec: registry#entry, TAP-REG-004). */
  endpoints(): RegistryEndpoint[];
  /** Its non-terminal tasks across all sessions now (spec: registry#load, TAP-REG-006). */
  runningTasks(): number;
  log?(level: 'info' | 'warn', message: string): void;
}

/** A joined mesh. */
export interface Membership {
  readonly agentId: string;
  readonly instance: string;
  readonly registry: Registry;
  /** The entry as last written. */
  readonly entry: RegistryEntry;
  /** Resolves with the reason when the membership ended: left, or lost its key (TAP-REG-018). */
  readonly ended: Promise<string>;
  /** Withdraws the entry and stops writing; idempotent (spec: registry#withdrawal). */
  leave(): Promise<void>;
}

/** Checks the timing options (spec: registry#heartbeats, TAP-REG-014; registry#nats, TAP-REG-041). */
function timing(options: MeshOptions, maxAgeMs: number): { heartbeatMs: number; ttlMs: number } {
  const heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  if (!Number.isSafeInteger(heartbeatMs) || heartbeatMs < MIN_HEARTBEAT_MS)
    throw new RangeError(`the mesh heartbeat must be a whole number of at least ${MIN_HEARTBEAT_MS} ms, not ${heartbeatMs}`);
  const ttlMs = options.ttlMs ?? 3 * heartbeatMs;
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 2 * heartbeatMs)
    throw new RangeError(`the mesh entry lifetime (${ttlMs} ms) must be at least twice the heartbeat (${heartbeatMs} ms)`);
  if (maxAgeMs > 0 && ttlMs > maxAgeMs)
    throw new RangeError(
      `the mesh entry lifetime (${ttlMs} ms) is above the registry bucket's max_age (${maxAgeMs} ms), which would remove a live entry; choose a shorter one`,
    );
  return { heartbeatMs, ttlMs };
}

/**
 * Joins the mesh: writes the entry by create, or over a stale entry of another instance, and
 * refuses when a live entry of another instance holds the agent id (spec: registry#instances).
 */
export async function joinMesh(options: MeshOptions, source: MemberSource): Promise<Membership> {
  let nc = options.nc;
  const owned = nc === undefined;
  if (!nc) {
    if (!options.url) throw new TypeError('joining a mesh needs the registry server: a nats:// url or an open connection (nc)');
    const address = parseNatsUrl(options.url);
    try {
      nc = await connect({
        servers: address.servers,
        name: `tap registry member ${source.card.agent_id}`,
        maxReconnectAttempts: -1,
        ...(address.user !== undefined ? { user: address.user, pass: address.pass } : {}),
      });
    } catch (err) {
      throw new Error(`could not connect to the mesh's NATS server at ${address.servers.join(',')}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }
  try {
    const registry = await openRegistry(nc, options.registry);
    return await startMembership(registry, timing(options, registry.maxAgeMs), source, owned ? () => nc.close() : undefined);
  } catch (err) {
    if (owned) await nc.close().catch(() => {});
    throw err;
  }
}

async function startMembership(
  registry: Registry,
  { heartbeatMs, ttlMs }: { heartbeatMs: number; ttlMs: number },
  source: MemberSource,
  closeConnection: (() => Promise<void>) | undefined,
): Promise<Membership> {
  const agentId = source.card.agent_id;
  // spec: registry#instances, TAP-REG-009: 96 random bits per join.
  const instance = randomBytes(12).toString('base64url');
  const startedAt = new Date().toISOString();
  // The figure of the last write begun: a change seen while a write is in flight goes in the next one.
  let running = source.runningTasks();
  const entryNow = (): RegistryEntry => ({
    agent_id: agentId,
    instance,
    card: source.card,
    versions: [...source.versions],
    endpoints: source.endpoints(),
    load: { running_tasks: running, max_concurrent_tasks: source.card.limits.max_concurrent_tasks },
    heartbeat_ms: heartbeatMs,
    ttl_ms: ttlMs,
    started_at: startedAt,
    updated_at: new Date().toISOString(),
  });

  let entry = entryNow();
  let revision: number;
  try {
    revision = await registry.create(entry);
  } catch {
    // The key holds a value: take it over only when it is stale (TAP-REG-010, TAP-REG-011, TAP-REG-012).
    const held = await registry.get(agentId, { includeStale: true });
    if (held && isLive(held) && held.entry.instance !== instance)
      throw new Error(
        `agent id ${agentId} is taken in the mesh: another process (instance ${held.entry.instance}, last heartbeat ${held.entry.updated_at}) holds it; give this agent another id or stop that one`,
      );
    const last = await registry.lastRevision(agentId);
    if (last === undefined) revision = await registry.create(entry);
    else revision = await registry.update(entry, last);
  }

  let state: 'in' | 'leaving' | 'out' = 'in';
  let markEnded!: (why: string) => void;
  const ended = new Promise<string>((r) => (markEnded = r));
  let lastWrite = Date.now();
  let writing: Promise<void> | undefined;

  const write = async (): Promise<void> => {
    running = source.runningTasks();
    entry = entryNow();
    try {
      revision = await registry.update(entry, revision);
      lastWrite = Date.now();
    } catch (err) {
      const message = (err as Error).message;
      if (/wrong last sequence/i.test(message)) {
        // An earlier write whose acknowledgement was lost may have landed: the key is still ours then.
        const held = await registry.get(agentId, { includeStale: true }).catch(() => undefined);
        if (held?.entry.instance === instance && state === 'in') {
          revision = held.revision;
          return;
        }
        // spec: registry#heartbeats, TAP-REG-018: another write came between; the key is no longer ours.
        source.log?.('warn', `mesh: another process wrote the registry entry of ${agentId}; this agent leaves the mesh`);
        stop('lost');
        markEnded('another process took the registry entry');
        return;
      }
      source.log?.('warn', `mesh: could not renew the registry entry of ${agentId} (${message}); trying again`);
    }
  };
  const writeOnce = (): void => {
    if (state !== 'in' || writing) return;
    writing = write().finally(() => (writing = undefined));
  };

  // spec: registry#load, TAP-REG-020: the load is sampled every tenth of the heartbeat (100 ms at least),
  // and a changed figure or a due heartbeat makes one write.
  const gap = Math.max(MIN_HEARTBEAT_MS, Math.floor(heartbeatMs / 10));
  const ticker = setInterval(() => {
    const due = Date.now() - lastWrite >= heartbeatMs - gap;
    if (due || source.runningTasks() !== running) writeOnce();
  }, gap);
  ticker.unref();

  const stop = (to: 'leaving' | 'lost'): void => {
    clearInterval(ticker);
    state = to === 'leaving' ? 'leaving' : 'out';
    if (to === 'lost') void closeConnection?.().catch(() => {});
  };

  let leaving: Promise<void> | undefined;
  const leave = (): Promise<void> => {
    leaving ??= (async () => {
      if (state === 'out') return;
      stop('leaving');
      await writing;
      // spec: registry#withdrawal, TAP-REG-027: only our own write is deleted.
      await registry.withdraw(agentId, revision).catch((err: Error) => {
        source.log?.('warn', `mesh: could not withdraw the registry entry of ${agentId}: ${err.message}`);
      });
      state = 'out';
      await closeConnection?.().catch(() => {});
      markEnded('left the mesh');
    })();
    return leaving;
  };

  source.log?.('info', `mesh: ${agentId} joined the registry ${registry.bucket} (instance ${instance}, heartbeat ${heartbeatMs} ms)`);
  return {
    agentId,
    instance,
    registry,
    get entry() {
      return entry;
    },
    ended,
    leave,
  };
}
