/**
 * What a message holds that a later version than the session's defines: a message type, an error
 * code, a task state or a payload member that schemas/v1 marks `"since": "1.1"`, read from the
 * tables and the payload schemas (spec: versioning#tap-1-1, TAP-VER-102).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compareVersions, parseVersion } from '../reference/core/versions.ts';
import { repoPath } from './paths.ts';
import { errorEntry, messageEntry, STATE_TABLE } from './schemas.ts';

const SCHEMA_DIR = repoPath('schemas/v1');

/** True when `since` names a version later than `version`. */
/** True when `since` names a version later than `version`. */
export function later(since: unknown, version: string): boolean {
  const s = typeof since === 'string' ? parseVersion(since) : null;
  const v = parseVersion(version);
  return !!s && !!v && compareVersions(s, v) > 0;
}

const payloadMembers = new Map<string, Record<string, { since?: string }>>();

/** The top-level members of a message type's payload schema, by name (empty for a type without one). */
function membersOf(type: string, suffix = '.payload'): Record<string, { since?: string }> {
  let members = payloadMembers.get(type + suffix);
  if (!members) {
    const file = join(SCHEMA_DIR, `${type}${suffix}.schema.json`);
    members = existsSync(file)
      ? ((JSON.parse(readFileSync(file, 'utf8')) as { properties?: Record<string, { since?: string }> }).properties ?? {})
      : {};
    payloadMembers.set(type + suffix, members);
  }
  return members;
}

/** The version a task state was added in, from the state table's `since` map ("1.0" when it has none). */
function stateSince(state: unknown): string | undefined {
  const since = (STATE_TABLE as { since?: Record<string, string> }).since;
  return typeof state === 'string' ? since?.[state] : undefined;
}

/**
 * What in `msg` only a version later than `version` defines, as a phrase ("the message type
 * task.input", "the member quiet of task.request"); null when it holds nothing of a later version.
 */
export function laterThan(msg: { type?: unknown; payload?: Record<string, unknown> }, version: string): string | null {
  const type = String(msg.type);
  if (later(messageEntry(type)?.since, version)) return `the message type ${type}, which TAP ${messageEntry(type)!.since} defines`;
  const p = msg.payload ?? {};
  const members = membersOf(type);
  for (const name of Object.keys(p)) {
    if (later(members[name]?.since, version)) return `the member ${name} of ${type}, which TAP ${members[name]!.since} defines`;
  }
  // The members 1.1 adds to a card and to metadata (spec: handshake#negotiated-extensions, envelope#trace-context).
  const card = p.agent as Record<string, unknown> | undefined;
  const cardMembers = membersOf('agent-card', '');
  for (const name of Object.keys(card && typeof card === 'object' ? card : {})) {
    if (later(cardMembers[name]?.since, version))
      return `the member ${name} of the card in ${type}, which TAP ${cardMembers[name]!.since} defines`;
  }
  const metadata = (msg as { metadata?: unknown }).metadata;
  const metadataMembers =
    (membersOf('envelope', '').metadata as { properties?: Record<string, { since?: string }> } | undefined)?.properties ?? {};
  for (const name of Object.keys(metadata && typeof metadata === 'object' ? metadata : {})) {
    if (later(metadataMembers[name]?.since, version))
      return `the member metadata.${name} of ${type}, which TAP ${metadataMembers[name]!.since} defines`;
  }
  const code = type === 'error' ? p.code : (p.error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && later(errorEntry(code)?.since, version))
    return `the error code ${code}, which TAP ${errorEntry(code)!.since} defines`;
  for (const state of [p.state, (p.data as { state?: unknown } | undefined)?.state, p.status]) {
    if (later(stateSince(state), version)) return `the task state ${String(state)}, which TAP ${stateSince(state)} defines`;
  }
  return null;
}
