/**
 * The requirement index, spec/1.0/requirements.json and the requirements 1.1 adds
 * (spec/1.1/requirements.json), read at run time: each requirement's id, level, anchor, sentence
 * and the version that added it. Cases name requirement ids; their quotes come from here, so a case
 * never restates the spec (spec: conformance#traceability).
 */
import { existsSync, readFileSync } from 'node:fs';
import { repoPath } from './paths.ts';
import type { Level } from './verdict.ts';

export interface Requirement {
  id: string;
  level: Level;
  /** The stable anchor, e.g. "handshake#versions". */
  anchor: string;
  /** The requirement sentence as the spec states it. */
  text: string;
  /** The version that added it: "1.0", or "1.1" for a rule only a session of 1.1 follows (spec: versioning#tap-1-1). */
  since: string;
}

export const REQUIREMENTS_FILE = 'spec/1.0/requirements.json';
/** The requirements 1.1 adds; read beside REQUIREMENTS_FILE when it exists. */
export const REQUIREMENTS_1_1_FILE = 'spec/1.1/requirements.json';

/** Reads one entry whatever the generator named its members. */
function entryOf(raw: Record<string, unknown>): Requirement | null {
  const id = raw.id;
  if (typeof id !== 'string') return null;
  const level = String(raw.level ?? raw.keyword ?? 'MUST')
    .toUpperCase()
    .replace(/ NOT$/, '') as Level;
  const anchor = String(raw.anchor ?? raw.spec ?? raw.section ?? '');
  const text = String(raw.text ?? raw.quote ?? raw.sentence ?? raw.requirement ?? '');
  const since = typeof raw.since === 'string' ? raw.since : '1.0';
  return { id, level: level === 'SHOULD' || level === 'MAY' ? level : 'MUST', anchor, text, since };
}

let cache: Map<string, Requirement> | null | undefined;

/** The requirement index by id, or null when the file does not exist yet. */
export function loadRequirements(path = repoPath(REQUIREMENTS_FILE)): Map<string, Requirement> | null {
  if (cache !== undefined && path === repoPath(REQUIREMENTS_FILE)) return cache;
  let result: Map<string, Requirement> | null = null;
  if (existsSync(path)) {
    result = new Map();
    // The default index is 1.0's with what 1.1 adds (spec: versioning#tap-1-1).
    const later = path === repoPath(REQUIREMENTS_FILE) ? repoPath(REQUIREMENTS_1_1_FILE) : undefined;
    for (const file of later && existsSync(later) ? [path, later] : [path]) {
      const data = JSON.parse(readFileSync(file, 'utf8')) as unknown;
      const list = Array.isArray(data) ? data : ((data as { requirements?: unknown[] }).requirements ?? []);
      for (const raw of list as Record<string, unknown>[]) {
        const e = entryOf(raw);
        if (e) result.set(e.id, e);
      }
    }
  }
  if (path === repoPath(REQUIREMENTS_FILE)) cache = result;
  return result;
}

/** The quoted sentence(s) of a case's requirements, for reports. */
export function quoteOf(ids: readonly string[]): string {
  const index = loadRequirements();
  if (!index) return '';
  return ids
    .map((id) => index.get(id)?.text)
    .filter((t): t is string => !!t)
    .join(' … ');
}
