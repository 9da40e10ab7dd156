/**
 * An agent's membership of a mesh: it joins the registry under its agent id, renews its entry
 * with heartbeats, moves its load figures as tasks start and finish (sampled, so that a burst of
 * changes travels in one write), signs every write when it has a key, writes its entry again
 * when another write replaced it while it was live, and withdraws the entry when it leaves
 * (spec: registry#instances, registry#heartbeats, registry#load, registry#signatures,
 * registry#withdrawal).
 */
import { randomBytes } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { connect } from '../transports/nats/client.ts';
import type { AgentCard } from '../../schemas/src/index.ts';
import { canonicalize } from '../core/jcs.ts';
import type { TlsOptions } from '../transports/tls.ts';
import { LEAN_CLIENT, natsClientOptions, parseNatsUrl } from '../transports/nats/url.ts';
import { trustOf, type SigningKey } from '../trust.ts';
import { isLive, MIN_HEARTBEAT_MS, type RegistryEndpoint, type RegistryEntry } from './entry.ts';
import { openRegistry, type OpenRegistryOptions, type Registry } from './registry.ts';
import { refusalOf, signEntry } from './signature.ts';
import { MissingPeerError } from '../peers.ts';

/** The default heartbeat, in ms (spec: registry#heartbeats). */
export const DEFAULT_HEARTBEAT_MS = 5_000;

/** Where the registry is and how often to renew the entry. */
export interface MeshOptions {
  /** A nats:// URL of the registry's server (credentials may be in it); or give `nc`. */
  url?: string;
  /** An open NATS connection to use instead of `url`; leaving does not close it. */
  nc?: NatsConnection;
  /** TLS of the connection to `url`: the authorities to trust and this member's certificate and key. */
  tls?: TlsOptions;
  /** How often the entry is renewed, in ms (default 5000, at least 100). */
  heartbeatMs?: number;
  /** How long the entry lives after its last write, in ms (default 3 × heartbeatMs). */
  ttlMs?: number;
  /** The registry bucket and whether to create it (default TAP_REGISTRY, created when missing). */
  registry?: OpenRegistryOptions;
  /** The agent's Ed25519 key, whose principal is its agent id: every write of the entry is signed with it (spec: registry#signatures). */
  signingKey?: SigningKey;
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
  /** Resolves with the reason when the membership ended: left, or another instance took over its stale entry (TAP-REG-046). */
  readonly ended: Promise<string>;
  /** How many times the agent wrote its entry again over another process's write (TAP-REG-018). */
  readonly reasserted: number;
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
  checkKey(options.signingKey, source);
  let nc = options.nc;
  const owned = nc === undefined;
  if (!nc) {
    if (!options.url) throw new TypeError('joining a mesh needs the registry server: a nats:// url or an open connection (nc)');
    const address = parseNatsUrl(options.url);
    try {
      nc = await connect({
        ...natsClientOptions(address, options.tls),
        name: `tap registry member ${source.card.agent_id}`,
        maxReconnectAttempts: -1,
        ...LEAN_CLIENT,
      });
    } catch (err) {
      // Without the NATS client there is nothing to connect with: say what to install (reference/peers.ts).
      if (err instanceof MissingPeerError) throw err;
      throw new Error(`could not connect to the mesh's NATS server at ${address.servers.join(',')}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }
  try {
    const registry = await openRegistry(nc, options.registry);
    return await startMembership(
      registry,
      timing(options, registry.maxAgeMs),
      source,
      options.signingKey,
      owned ? () => nc.close() : undefined,
    );
  } catch (err) {
    if (owned) await nc.close().catch(() => {});
    throw err;
  }
}

/** Joins the mesh through a registry already open; leaving does not close its connection. */
export async function joinRegistry(
  registry: Registry,
  options: Pick<MeshOptions, 'heartbeatMs' | 'ttlMs' | 'signingKey'>,
  source: MemberSource,
): Promise<Membership> {
  checkKey(options.signingKey, source);
  return startMembership(registry, timing(options, registry.maxAgeMs), source, options.signingKey, undefined);
}

/** Refuses a signing key of another principal than the agent (spec: registry#signatures). */
function checkKey(key: SigningKey | undefined, source: MemberSource): void {
  if (key && key.principal !== source.card.agent_id)
    throw new Error(
      `the mesh signing key belongs to ${key.principal}, not to agent ${source.card.agent_id}: give the key the trust file binds to this agent id`,
    );
}

async function startMembership(
  registry: Registry,
  { heartbeatMs, ttlMs }: { heartbeatMs: number; ttlMs: number },
  source: MemberSource,
  key: SigningKey | undefined,
  closeConnection: (() => Promise<void>) | undefined,
): Promise<Membership> {
  const agentId = source.card.agent_id;
  // spec: registry#instances, TAP-REG-009: 96 random bits per join.
  const instance = randomBytes(12).toString('base64url');
  const startedAt = new Date().toISOString();
  // The agent's own key as a trust file: what verifies as written by a process of this agent id.
  const own = key ? trustOf([key]) : undefined;
  // The figure of the last write begun: a change seen while a write is in flight goes in the next one.
  let running = source.runningTasks();
  const entryNow = (): RegistryEntry => {
    const unsigned: RegistryEntry = {
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
    };
    // spec: registry#signatures, TAP-REG-052: every write is signed.
    return key ? signEntry(unsigned, key) : unsigned;
  };
  /** Whether an entry another process wrote verifies as one of this agent id: signed with its key, and no replay (TAP-REG-053, TAP-REG-054). */
  const verifiesAsOurs = (held: { entry?: RegistryEntry; writtenAt?: Date } | undefined): boolean =>
    own !== undefined &&
    held?.entry !== undefined &&
    held.writtenAt !== undefined &&
    refusalOf(held.entry, held.writtenAt, own) === undefined;
  /** Whether the key holds a write of this very process: its instance, card and endpoints (and its signature, when it signs). */
  const isOwnWrite = (held: { entry?: RegistryEntry; writtenAt?: Date } | undefined): boolean =>
    held?.entry?.instance === instance &&
    canonicalize(held.entry.card) === canonicalize(source.card) &&
    canonicalize(held.entry.endpoints) === canonicalize(source.endpoints()) &&
    (own === undefined || verifiesAsOurs(held));

  let entry = entryNow();
  let revision: number;
  // When the last write the store took was sent: the entry is live at least ttl_ms from then (TAP-REG-046).
  let landedSentAt = Date.now();
  try {
    revision = await registry.create(entry);
  } catch (err) {
    if (err instanceof RangeError || (err as Error).name === 'RegistryFullError') throw err;
    // The key holds a value: take it over only when it is stale (TAP-REG-010, TAP-REG-011, TAP-REG-012),
    // or, for an agent that signs, when it does not verify with the agent's key (TAP-REG-045).
    const held = await registry.held(agentId);
    const live =
      held?.entry !== undefined && held.writtenAt !== undefined && isLive({ ...held, entry: held.entry, writtenAt: held.writtenAt });
    if (live && held?.entry?.instance !== instance && (own === undefined || verifiesAsOurs(held)))
      throw new Error(
        `agent id ${agentId} is taken in the mesh: another process (instance ${held?.entry?.instance}, last heartbeat ${held?.entry?.updated_at}) holds it; give this agent another id or stop that one`,
      );
    if (live)
      source.log?.(
        'warn',
        `mesh: the live registry entry of ${agentId} does not verify with this agent's key; this agent writes its own over it`,
      );
    entry = entryNow();
    landedSentAt = Date.now();
    revision = held === undefined ? await registry.create(entry) : await registry.update(entry, held.revision);
  }

  let state: 'in' | 'leaving' | 'out' = 'in';
  let markEnded!: (why: string) => void;
  const ended = new Promise<string>((r) => (markEnded = r));
  let lastWrite = Date.now();
  let writing: Promise<void> | undefined;

  let reasserted = 0;
  let lastNotice = 0;
  let unnoticed = 0;
  const write = async (): Promise<void> => {
    running = source.runningTasks();
    entry = entryNow();
    const sentAt = Date.now();
    try {
      revision = await registry.update(entry, revision);
      lastWrite = Date.now();
      landedSentAt = sentAt;
    } catch (err) {
      const message = (err as Error).message;
      if (/wrong last sequence/i.test(message)) await overwritten(Date.now());
      else source.log?.('warn', `mesh: could not renew the registry entry of ${agentId} (${message}); trying again`);
    }
  };

  // spec: registry#heartbeats, TAP-REG-018, TAP-REG-046: another write came between. The agent leaves only
  // when another instance of its agent id (signed with its key, when it signs) took over an
  // entry that may have turned stale; over anything else it writes its entry again.
  const overwritten = async (noticedAt: number): Promise<void> => {
    let held: Awaited<ReturnType<Registry['held']>>;
    try {
      held = await registry.held(agentId);
    } catch (err) {
      source.log?.('warn', `mesh: could not read the registry entry of ${agentId} (${(err as Error).message}); trying again`);
      return;
    }
    if (state !== 'in') return;
    // An earlier write whose acknowledgement was lost may have landed: the key is still ours then.
    if (isOwnWrite(held)) {
      revision = held!.revision;
      return;
    }
    const takenOver = held?.entry !== undefined && held.entry.instance !== instance && (own === undefined || verifiesAsOurs(held));
    if (takenOver && noticedAt - landedSentAt >= ttlMs) {
      source.log?.(
        'warn',
        `mesh: another process (instance ${held!.entry!.instance}) took over the registry entry of ${agentId} after it could have turned stale; this agent leaves the mesh`,
      );
      stop('lost');
      markEnded('another process took the registry entry');
      return;
    }
    reasserted++;
    const what =
      held?.entry === undefined
        ? held === undefined
          ? `removed the registry entry of ${agentId}`
          : `deleted the registry entry of ${agentId}, or wrote a value that is not an entry`
        : `wrote an entry of instance ${held.entry.instance} under the registry key of ${agentId}${
            own && !verifiesAsOurs(held) ? ", which does not verify with this agent's key" : " while this agent's entry was live"
          }`;
    unnoticed++;
    if (Date.now() - lastNotice >= 60_000) {
      source.log?.(
        'warn',
        `mesh: another process ${what}${unnoticed > 1 ? ` (${unnoticed} times since the last notice)` : ''}; this agent writes its own entry again`,
      );
      lastNotice = Date.now();
      unnoticed = 0;
    }
    entry = entryNow();
    const sentAt = Date.now();
    try {
      revision = held === undefined ? await registry.create(entry) : await registry.update(entry, held.revision);
      lastWrite = Date.now();
      landedSentAt = sentAt;
    } catch (err) {
      source.log?.('warn', `mesh: could not write the registry entry of ${agentId} again (${(err as Error).message}); trying again`);
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
    get reasserted() {
      return reasserted;
    },
    leave,
  };
}
