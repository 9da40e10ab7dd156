/**
 * The requirement index, spec/1.0/requirements.json, read at run time: each requirement's id,
 * level, anchor and sentence. Cases name requirement ids; their quotes come from here, so a case
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
}

export const REQUIREMENTS_FILE = 'spec/1.0/requirements.json';

/** Reads one entry whatever the generator named its members. */
function entryOf(raw: Record<string, unknown>): Requirement | null {
  const id = raw.id;
  if (typeof id !== 'string') return null;
  const level = String(raw.level ?? raw.keyword ?? 'MUST')
    .toUpperCase()
    .replace(/ NOT$/, '') as Level;
  const anchor = String(raw.anchor ?? raw.spec ?? raw.section ?? '');
  const text = String(raw.text ?? raw.quote ?? raw.sentence ?? raw.requirement ?? '');
  return { id, level: level === 'SHOULD' || level === 'MAY' ? level : 'MUST', anchor, text };
}

let cache: Map<string, Requirement> | null | undefined;

/** The requirement index by id, or null when the file does not exist yet. */
export function loadRequirements(path = repoPath(REQUIREMENTS_FILE)): Map<string, Requirement> | null {
  if (cache !== undefined && path === repoPath(REQUIREMENTS_FILE)) return cache;
  let result: Map<string, Requirement> | null = null;
  if (existsSync(path)) {
    const data = JSON.parse(readFileSync(path, 'utf8')) as unknown;
    const list = Array.isArray(data) ? data : ((data as { requirements?: unknown[] }).requirements ?? []);
    result = new Map();
    for (const raw of list as Record<string, unknown>[]) {
      const e = entryOf(raw);
      if (e) result.set(e.id, e);
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
