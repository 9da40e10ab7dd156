/**
 * tap-workspace.json: the settings fixed for the life of a workspace — protocol, claim mode,
 * lease, attempts, history limit (spec: bindings-workspace#configuration).
 */

/** How claims and commits are decided: by rename, or by link-count lock files (spec: bindings-workspace#lock-mode). */
export type ClaimMode = 'rename' | 'lock';

/** The members of tap-workspace.json. */
export interface WorkspaceConfig {
  protocol: string;
  claim_mode: ClaimMode;
  lease_ms: number;
  max_attempts: number;
  history_limit: number;
}

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

/** The smallest lease the library accepts, so that renewals every lease_ms / 3 stay meaningful. */
export const MIN_LEASE_MS = 100;

/** Checks a parsed tap-workspace.json; returns the config or the list of problems, each a sentence. */
export function checkConfig(value: unknown): { ok: true; config: WorkspaceConfig } | { ok: false; problems: string[] } {
  const problems: string[] = [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, problems: ['the file must hold one JSON object'] };
  }
  const v = value as Record<string, unknown>;
  if (typeof v.protocol !== 'string' || !PROTOCOL.test(v.protocol)) {
    problems.push('"protocol" must be a string like "tap/1.0"');
  }
  if (v.claim_mode !== 'rename' && v.claim_mode !== 'lock') problems.push('"claim_mode" must be "rename" or "lock"');
  const int = (key: string, min: number) => {
    const n = v[key];
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < min) problems.push(`"${key}" must be an integer of at least ${min}`);
  };
  int('lease_ms', MIN_LEASE_MS);
  int('max_attempts', 1);
  int('history_limit', 2);
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    config: {
      protocol: v.protocol as string,
      claim_mode: v.claim_mode as ClaimMode,
      lease_ms: v.lease_ms as number,
      max_attempts: v.max_attempts as number,
      history_limit: v.history_limit as number,
    },
  };
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
