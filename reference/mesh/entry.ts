/**
 * The registry's data: an entry as agents publish it, its validation, its lifetime and the
 * discovery query that matches it (spec: registry#entry, registry#lifetime, registry#discovery).
 * Pure: no I/O, no NATS.
 */
import type { AgentCard, Capability } from '../../schemas/src/index.ts';
import { parseRange, satisfies, type VersionRange } from './semver.ts';

/** The bindings an endpoint can name (spec: registry#entry). */
export type EndpointBinding = 'websocket' | 'nats';

/** Where an agent accepts sessions over one binding. */
export interface RegistryEndpoint {
  binding: EndpointBinding;
  url: string;
  /** The NATS subject prefix when it is not "tap". */
  prefix?: string;
}

/** The live load of an agent (spec: registry#load). */
export interface RegistryLoad {
  running_tasks: number;
  max_concurrent_tasks: number;
}

/** One agent's entry in the registry (spec: registry#entry). */
export interface RegistryEntry {
  agent_id: string;
  instance: string;
  card: AgentCard;
  versions: string[];
  endpoints: RegistryEndpoint[];
  load: RegistryLoad;
  heartbeat_ms: number;
  ttl_ms: number;
  started_at: string;
  updated_at: string;
  /** The agent's Ed25519 signature of the entry, when it signs (spec: registry#signatures). */
  signature?: string;
}

/** An entry as read from the store: with its revision and the store's write time. */
export interface RegistryRecord {
  entry: RegistryEntry;
  /** The store's revision of this write; updates and deletes compare against it. */
  revision: number;
  /** The write time (spec: registry#store): the store's clock where it keeps one. */
  writtenAt: Date;
}

/** The smallest heartbeat an agent may announce (spec: registry#heartbeats, TAP-REG-014). */
export const MIN_HEARTBEAT_MS = 100;

/** The largest entry, as UTF-8 JSON text, an agent writes and a requester reads (spec: registry#bounds, TAP-REG-047). */
export const MAX_ENTRY_BYTES = 65_536;

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const IDENTIFIER = /^[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*$/;

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const isWhole = (x: unknown, min = 0): x is number => Number.isSafeInteger(x) && (x as number) >= min;
const isText = (x: unknown): x is string => typeof x === 'string' && x.length > 0;

/** Why a value is not a valid entry, or undefined when it is one (spec: registry#entry, TAP-REG-001). */
export function entryProblem(value: unknown): string | undefined {
  if (!isObject(value)) return 'the entry is not a JSON object';
  const e = value;
  if (!isText(e.agent_id) || !IDENTIFIER.test(e.agent_id)) return 'agent_id is not an identifier';
  if (!isText(e.instance)) return 'instance is not a non-empty string';
  if (!isObject(e.card) || e.card.agent_id !== e.agent_id) return 'card is not an agent card of the same agent_id';
  if (!Array.isArray(e.card.capabilities) || !isObject(e.card.limits)) return 'card has no capabilities or limits';
  if (!Array.isArray(e.versions) || e.versions.length === 0 || !e.versions.every(isText)) return 'versions is not a list of versions';
  if (!Array.isArray(e.endpoints)) return 'endpoints is not a list';
  for (const ep of e.endpoints) {
    if (!isObject(ep) || !isText(ep.binding) || !isText(ep.url)) return 'an endpoint lacks binding or url';
    if (ep.prefix !== undefined && !isText(ep.prefix)) return 'an endpoint has a prefix that is not a string';
  }
  if (!isObject(e.load) || !isWhole(e.load.running_tasks) || !isWhole(e.load.max_concurrent_tasks, 1))
    return 'load lacks running_tasks or max_concurrent_tasks';
  if (!isWhole(e.heartbeat_ms, 1) || !isWhole(e.ttl_ms, 1)) return 'heartbeat_ms or ttl_ms is not a positive whole number';
  if (!isText(e.started_at) || !DATE_TIME.test(e.started_at)) return 'started_at is not an RFC 3339 UTC date-time';
  if (!isText(e.updated_at) || !DATE_TIME.test(e.updated_at)) return 'updated_at is not an RFC 3339 UTC date-time';
  if (e.signature !== undefined && !isText(e.signature)) return 'signature is not a string';
  return undefined;
}

/** The entry in a value, or undefined when it is not a valid one (spec: registry#entry, TAP-REG-008). */
export function parseEntry(value: unknown): RegistryEntry | undefined {
  return entryProblem(value) === undefined ? (value as RegistryEntry) : undefined;
}

/** When an entry turns stale: its write time plus its own ttl_ms (spec: registry#lifetime, TAP-REG-022). */
export function expiresAt(record: RegistryRecord): number {
  return record.writtenAt.getTime() + record.entry.ttl_ms;
}

/** Whether an entry is live at `now` (spec: registry#lifetime). */
export function isLive(record: RegistryRecord, now = Date.now()): boolean {
  return now < expiresAt(record);
}

/** running_tasks / max_concurrent_tasks; 1 or more is full (spec: registry#load). */
export function loadRatio(entry: RegistryEntry): number {
  return entry.load.running_tasks / entry.load.max_concurrent_tasks;
}

/** A discovery query (spec: registry#discovery). Every member it gives must hold. */
export interface DiscoveryQuery {
  /** The capability name. */
  capability?: string;
  /** A version range in the notation of registry#version-ranges; any version when absent. */
  version?: string;
  /** The permissions the requester holds; when given, capabilities requiring others do not match. */
  permissions?: readonly string[];
  /** A binding the requester speaks: the entry must have an endpoint of it. */
  binding?: EndpointBinding;
  /** Leave out full entries (spec: registry#discovery, TAP-REG-033). */
  notFull?: boolean;
}

/** A query with its range parsed once; throws a RangeError for an unreadable range (TAP-REG-036). */
export interface CompiledQuery {
  readonly query: DiscoveryQuery;
  readonly range?: VersionRange;
}

/** Checks a query and parses its range; throws, naming the part it could not read (TAP-REG-036). */
export function compileQuery(query: DiscoveryQuery = {}): CompiledQuery {
  if (query.version !== undefined && query.capability === undefined)
    throw new RangeError(`a version range ("${query.version}") needs a capability name to apply to`);
  return { query, range: query.version === undefined ? undefined : parseRange(query.version) };
}

/** The capabilities of an entry's card that a query matches (spec: registry#discovery). */
export function matchingCapabilities(entry: RegistryEntry, compiled: CompiledQuery): Capability[] {
  const { query, range } = compiled;
  return entry.card.capabilities.filter(
    (c) =>
      (query.capability === undefined || c.name === query.capability) &&
      (range === undefined || satisfies(c.version, range)) &&
      (query.permissions === undefined || c.requires_permission === undefined || query.permissions.includes(c.requires_permission)),
  );
}

/**
 * Whether a live entry matches a query: a capability of the name and range the requester may
 * use (TAP-REG-029, TAP-REG-030), an endpoint of the binding (TAP-REG-031), and never stale
 * (TAP-REG-032).
 */
export function matches(record: RegistryRecord, compiled: CompiledQuery, now = Date.now()): boolean {
  if (!isLive(record, now)) return false;
  const { query } = compiled;
  if (query.binding !== undefined && !record.entry.endpoints.some((e) => e.binding === query.binding)) return false;
  if (query.notFull && loadRatio(record.entry) >= 1) return false;
  const anyCapabilityFilter = query.capability !== undefined || query.permissions !== undefined;
  return !anyCapabilityFilter || matchingCapabilities(record.entry, compiled).length > 0;
}
