/**
 * tap-workspace.json: the settings fixed for the life of a workspace — protocol, claim mode,
 * lease, attempts, history limit (spec: bindings-workspace#configuration).
 */

import type { WorkspaceConfig } from '../../schemas/src/index.ts';
import { validateAgainst } from '../core/index.ts';
import { SCHEMA_FILES } from '../core/schema-bundle.ts';

export type { WorkspaceConfig };

/** How claims and commits are decided: by rename, or by link-count lock files (spec: bindings-workspace#lock-mode). */
export type ClaimMode = WorkspaceConfig['claim_mode'];

/** The settings a new workspace gets unless told otherwise. */
export const DEFAULT_CONFIG: Readonly<WorkspaceConfig> = {
  protocol: 'tap/1.0',
  claim_mode: 'rename',
  lease_ms: 30_000,
  max_attempts: 3,
  history_limit: 100,
};

/** The protocol majors this library speaks. */
export const SUPPORTED_MAJORS = [1];

const PROTOCOL = /^tap\/(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})$/;

/** Checks a parsed tap-workspace.json against workspace-config.schema.json; returns the config or the problems, each a sentence. */
export function checkConfig(value: unknown): { ok: true; config: WorkspaceConfig } | { ok: false; problems: string[] } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, problems: ['the file must hold one JSON object'] };
  }
  const issues = validateAgainst('workspace-config.schema.json', value);
  if (issues) {
    const members = new Set(issues.map((i) => i.path.split('/')[1] ?? ''));
    return { ok: false, problems: [...members].map(describeMember) };
  }
  const v = value as WorkspaceConfig;
  const { protocol, claim_mode, lease_ms, max_attempts, history_limit } = v;
  return { ok: true, config: { protocol, claim_mode, lease_ms, max_attempts, history_limit } };
}

/** A sentence saying what a member of tap-workspace.json must be, read from its schema. */
function describeMember(name: string): string {
  // The emitted schema, not its TypeBox source: loading that would load TypeBox with every agent.
  const emitted = SCHEMA_FILES['workspace-config.schema.json'] as { properties: unknown };
  const schema = (emitted.properties as Record<string, { anyOf?: { const: string }[]; minimum?: number; pattern?: string }>)[name];
  if (!schema) return `the file must have "protocol", "claim_mode", "lease_ms", "max_attempts" and "history_limit"`;
  if (schema.anyOf) return `"${name}" must be ${schema.anyOf.map((b) => `"${b.const}"`).join(' or ')}`;
  if (schema.minimum !== undefined) return `"${name}" must be an integer of at least ${schema.minimum}`;
  return `"${name}" must be a string like "tap/1.0"`;
}

/** The major version of a "tap/M.m" string, or null. */
export function protocolMajor(protocol: string): number | null {
  const m = PROTOCOL.exec(protocol);
  return m ? Number(m[1]) : null;
}

/** Why this library cannot work in a workspace with this config, or null when it can (spec: bindings-workspace#configuration). */
export function unsupportedReason(config: WorkspaceConfig): string | null {
  const major = protocolMajor(config.protocol);
  if (major === null || !SUPPORTED_MAJORS.includes(major)) {
    return `the workspace speaks ${config.protocol}; this library speaks tap/1.x`;
  }
  return null;
}
