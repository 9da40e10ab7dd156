/**
 * What an agent is built from: its card, its capability handlers, keys, clock, limits and
 * logger, with the defaults the runtime applies (spec: handshake#params, limits).
 */
import type { TelemetryOptions } from '../telemetry.ts';
import type { AgentCard, Extension } from '../../schemas/src/index.ts';
import type { AuthenticatedCredentials } from '../core/handshake.ts';
import type { Clock, Hmac, Logger, RandomSource } from '../core/platform.ts';
import type { CapabilityDefinition, Handler } from './handler.ts';
import type { JournalOptions } from './journal.ts';
import type { AuditOptions } from '../ops/audit.ts';
import { SUPPORTED_VERSIONS } from '../core/catalogue.ts';

export type { Clock, Logger, TimerHandle } from '../core/platform.ts';
export type { CapabilityDefinition } from './handler.ts';
export { iso } from './outbound.ts';

/** The platform clock. Its timers keep the process alive, as pending protocol work should; every one is cleared when its work ends. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, Math.min(Math.max(0, ms), 2_147_483_647)),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** A pre-shared HMAC key bound to exactly one requester agent id (spec: integrity#keys). */
export interface PeerKey {
  key_id: string;
  /** The key as base64url without padding, at least 32 bytes. */
  key: string;
  /** The requester agent id the key is bound to. */
  peer: string;
}

/** Credentials an authenticator accepted: the principal, and the permissions and expiry they carry (a token's scopes and `exp`). */
export type { AuthenticatedCredentials } from '../core/handshake.ts';

/** What an authenticator answers: a principal (alone, or with what the credentials allow), or a refusal, with a reason for people. */
export type AuthenticatorAnswer = string | AuthenticatedCredentials | null | { refused: string };

/**
 * Decides the principal of a session from the credentials of its handshake.init, at once or
 * asynchronously (a token verified against a key set); null or `{ refused }` refuses them with
 * AUTH_REQUIRED (spec: handshake#credentials). An asynchronous authenticator is asked before the
 * init is checked in full, so `peer` is the card as sent.
 */
export type Authenticator = (
  credentials: { scheme: string; token?: string },
  peer: AgentCard,
) => AuthenticatorAnswer | Promise<AuthenticatorAnswer>;

/** Options of `createAgent`. */
export interface AgentOptions {
  /** The agent card; `durability` is set by the runtime ("restart" with a stateDir). */
  card: AgentCard;
  /** Handlers by capability name; a bare handler needs an entry in `card.capabilities`. */
  capabilities: Record<string, Handler | CapabilityDefinition>;
  /** Where the journal lives; with it the agent survives restarts (spec: durability). */
  stateDir?: string;
  /** The journal's bounds and, for tests, its file operations (spec: tasks#journal). */
  journal?: JournalOptions;
  /**
   * Keep an audit trail: one chained JSON line per finished task in `file`, rotated past
   * `maxBytes` (default 16 MiB) keeping `keep` files (default 5); `tapctl audit verify` checks it.
   * Default: TAP_AUDIT_FILE (with TAP_AUDIT_MAX_BYTES, TAP_AUDIT_KEEP) of `env`; false keeps none.
   */
  audit?: AuditOptions | false;
  /**
   * Pre-shared keys, each bound to one requester (spec: integrity#keys). The key of a conformance
   * run in TAP_HMAC_KEY_ID, TAP_HMAC_KEY and TAP_HMAC_PEER is added to them unless `env` is false
   * (spec: conformance#key-provisioning).
   */
  keys?: PeerKey[];
  /**
   * Where the agent reads TAP_HMAC_* and TAP_CONFORMANCE (default: the process's environment);
   * false reads nothing.
   */
  env?: Readonly<Record<string, string | undefined>> | false;
  /**
   * Offer the conformance capabilities tap.test.* (spec: conformance#test-capabilities). Default:
   * when the environment has TAP_CONFORMANCE=1, which tap-conform sets for the agents it starts;
   * never otherwise, so an agent in production does not offer them.
   */
  conformance?: boolean;
  /**
   * While the agent serves stdio, WebSocket or NATS, SIGTERM and SIGINT shut it down and the
   * process exits with status 0 (spec: shutdown#signals). Default true; false leaves signals to
   * the caller.
   */
  signals?: boolean;
  /** Credential check for handshake.init.credentials: the principal they prove, or null to refuse them. Without it credentials are ignored. */
  authenticate?: Authenticator;
  /**
   * Refuse a handshake.init without credentials with AUTH_REQUIRED, unless the binding
   * authenticated the connection (a client certificate) (spec: handshake#credentials). Needs `authenticate`.
   */
  requireCredentials?: boolean;
  /** Principals holding tap.admin.shutdown: their shutdown.request stops the whole process (spec: shutdown#scope). */
  adminPrincipals?: string[];
  clock?: Clock;
  random?: RandomSource;
  hmac?: Hmac;
  /** Where the runtime's log lines go (default: stderr, info and above). */
  logger?: Logger;
  /**
   * Check every message the runtime builds against its type's schema before sending, and throw
   * on a mismatch: a debugging aid, off by default (default: TAP_VALIDATE_OUTBOUND=1 in the
   * environment turns it on).
   */
  validateOutbound?: boolean;
  /**
   * The protocol versions the agent speaks, highest first (default ["1.1", "1.0"]); ["1.0"] makes
   * a 1.0 agent (spec: handshake#version-negotiation, versioning#tap-1-1).
   */
  versions?: readonly string[];
  /**
   * The extensions the agent supports, listed in its card in every session of 1.1; one marked
   * `required` is one no session goes without (default none; spec: handshake#negotiated-extensions).
   */
  extensions?: readonly AgentExtension[];
  /**
   * Traces every task with OpenTelemetry, one span per task attempt under the request's W3C trace
   * context: `{}` uses the global tracer provider, `{ tracer }` a tracer of your own. Needs the
   * optional peer @opentelemetry/api; without the option it is never loaded (default: off).
   */
  telemetry?: TelemetryOptions;
  /**
   * Counts, for /metrics, the tasks accepted and finished by outcome, their durations and the
   * refused requests (default true). false counts nothing per task: those series are left out, and
   * the gauges read at scrape time (sessions, tasks by state, draining) stay.
   */
  metrics?: boolean;
  /** Heartbeat the agent proposes in negotiation (default 15 000 ms). */
  heartbeatMs?: number;
  /** request_timeout_ms used when the requester proposes none (default 30 000 ms). */
  requestTimeoutMs?: number;
  /** Whether the agent streams output events at all (default true). */
  streaming?: boolean;
  /** Each handshake step's timeout (default 10 000 ms). */
  handshakeTimeoutMs?: number;
  /** How long a session that lost its transport stays resumable (default 300 000 ms). */
  resumeWindowMs?: number;
  /** Messages retained per task for resume (default 512). */
  maxRetainedMessages?: number;
  /** Skew window for signed messages (default 300 000 ms). */
  skewMs?: number;
  /** Grace of a process-wide shutdown (signals), in ms (default 10 000). */
  shutdownGraceMs?: number;
  /** How long a cancelled handler has to release before its task ends cancelled (default 5 000 ms). */
  cancelGraceMs?: number;
  /**
   * How long a shutting-down session still answers requests already on their way and lets
   * running tasks finish before the rest are handed off; at most half the grace period (default 250 ms).
   */
  drainMs?: number;
  /** Message ids remembered per session for duplicate suppression (default 10 000). */
  maxDuplicateEntries?: number;
  /** Bytes of replies the duplicate table of one session holds beyond its 1 024 newest entries (default 4 MiB; spec: limits#table-limits). */
  maxDuplicateBytes?: number;
  /**
   * Tasks kept per principal, terminal ones with their streams and idempotency records
   * (default 4 096); at the cap, a terminal task past its retention is forgotten, else BUSY
   * (spec: limits#table-limits).
   */
  maxTasksKeptPerPrincipal?: number;
  /** Bytes a connection may leave unread before it is closed as if lost (default 16 MiB; spec: limits#back-pressure). */
  maxUnsentBytes?: number;
  /** WebSocket and NATS connections open at once; more are refused with 1013 (default 1 024). */
  maxConnections?: number;
  /**
   * Connections open at once from one origin the binding can name (a WebSocket address, a NATS
   * user the server vouched for); more are refused with 1013 (default a quarter of maxConnections;
   * spec: limits#sources).
   */
  maxConnectionsPerSource?: number;
  /**
   * Sessions kept, orphaned ones included; a new one beyond first ends the orphaned session with
   * no unfinished task of the source holding the most sessions, else it is refused BUSY
   * (default 4 096; spec: limits#sources).
   */
  maxSessions?: number;
  /**
   * Sessions one source keeps: a principal, or the anonymous sessions of one origin (a WebSocket
   * address, a NATS user). A new one beyond first ends that source's longest-orphaned session
   * with no unfinished task, else it is refused BUSY (default a quarter of maxSessions; spec: limits#sources).
   */
  maxSessionsPerSource?: number;
  /** Tasks kept across all principals (default 16 384). */
  maxTasksKept?: number;
  /** Bytes of retained stream messages kept per principal (default 256 MiB). */
  maxRetainedBytesPerPrincipal?: number;
}

/**
 * An extension the agent supports: its card entry and, for an extension that marks the messages
 * of a task, the `metadata` members it adds to each message of a task's stream in a session that
 * uses it, and only there (spec: handshake#negotiated-extensions).
 */
export interface AgentExtension extends Extension {
  metadata?: Readonly<Record<string, unknown>>;
}

/** The options with every default applied. */
export interface Settings {
  versions: readonly string[];
  extensions: readonly AgentExtension[];
  heartbeatMs: number;
  requestTimeoutMs: number;
  streaming: boolean;
  handshakeTimeoutMs: number;
  resumeWindowMs: number;
  maxRetainedMessages: number;
  skewMs: number;
  shutdownGraceMs: number;
  cancelGraceMs: number;
  drainMs: number;
  maxDuplicateEntries: number;
  maxDuplicateBytes: number;
  maxTasksKeptPerPrincipal: number;
  maxTasksKept: number;
  maxRetainedBytesPerPrincipal: number;
  maxUnsentBytes: number;
  maxConnections: number;
  maxConnectionsPerSource: number;
  maxSessions: number;
  maxSessionsPerSource: number;
}

/** Applies the defaults to `options`. */
export function settingsOf(options: AgentOptions): Settings {
  return {
    versions: options.versions ?? SUPPORTED_VERSIONS,
    extensions: options.extensions ?? [],
    heartbeatMs: options.heartbeatMs ?? 15_000,
    requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
    streaming: options.streaming ?? true,
    handshakeTimeoutMs: options.handshakeTimeoutMs ?? 10_000,
    resumeWindowMs: options.resumeWindowMs ?? 300_000,
    maxRetainedMessages: options.maxRetainedMessages ?? 512,
    skewMs: options.skewMs ?? 300_000,
    shutdownGraceMs: options.shutdownGraceMs ?? 10_000,
    cancelGraceMs: options.cancelGraceMs ?? 5_000,
    drainMs: options.drainMs ?? 250,
    maxDuplicateEntries: options.maxDuplicateEntries ?? 10_000,
    maxDuplicateBytes: options.maxDuplicateBytes ?? 4 * 1024 * 1024,
    maxTasksKeptPerPrincipal: options.maxTasksKeptPerPrincipal ?? 4_096,
    maxTasksKept: options.maxTasksKept ?? 16_384,
    maxRetainedBytesPerPrincipal: options.maxRetainedBytesPerPrincipal ?? 256 * 1024 * 1024,
    maxUnsentBytes: options.maxUnsentBytes ?? 16 * 1024 * 1024,
    maxConnections: options.maxConnections ?? 1024,
    maxConnectionsPerSource: options.maxConnectionsPerSource ?? Math.max(1, Math.floor((options.maxConnections ?? 1024) / 4)),
    maxSessions: options.maxSessions ?? 4096,
    maxSessionsPerSource: options.maxSessionsPerSource ?? Math.max(1, Math.floor((options.maxSessions ?? 4096) / 4)),
  };
}

/** The default logger: one line per entry on stderr, info and above (a `logger` of your own gets debug too). */
export const stderrLogger: Logger = (level, message) => {
  if (level === 'debug') return;
  try {
    process.stderr.write(`[tap-agent] ${level}: ${message}\n`);
  } catch {
    // stderr gone: nothing to do.
  }
};
