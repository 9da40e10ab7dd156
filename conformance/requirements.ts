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

/** The requirement index by id (1.0's with 1.1's, or only the file `path` names), or null when the file does not exist yet. */
export function loadRequirements(path?: string): Map<string, Requirement> | null {
  // Every case's definition asks for the default index: it is read once, and its path resolved once.
  if (path === undefined && cache !== undefined) return cache;
  const file = path ?? repoPath(REQUIREMENTS_FILE);
  let result: Map<string, Requirement> | null = null;
  if (existsSync(file)) {
    result = new Map();
    // The default index is 1.0's with what 1.1 adds (spec: versioning#tap-1-1).
    const later = path === undefined ? repoPath(REQUIREMENTS_1_1_FILE) : undefined;
    for (const f of later && existsSync(later) ? [file, later] : [file]) {
      const data = JSON.parse(readFileSync(f, 'utf8')) as unknown;
      const list = Array.isArray(data) ? data : ((data as { requirements?: unknown[] }).requirements ?? []);
      for (const raw of list as Record<string, unknown>[]) {
        const e = entryOf(raw);
        if (e) result.set(e.id, e);
      }
    }
  }
  if (path === undefined) cache = result;
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
