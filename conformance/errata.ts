/**
 * The errata of TAP 1.0 (spec/1.0/errata.json) as tap-conform reads them: which errata a failed
 * case falls under, so that a report tells an agent certified before an erratum why it fails now
 * (spec: conformance#traceability). tools/check-errata.ts checks the file against the first text,
 * the requirement index and the cases.
 */
import { existsSync, readFileSync } from 'node:fs';
import { repoPath } from './paths.ts';

/** What an erratum did: added requirements, changed what one requires, or clarified its wording. */
export type ErratumKind = 'added' | 'changed' | 'clarified';

/** One normative change to TAP 1.0 since its first text. */
export interface Erratum {
  /** Stable id, "E1-<area>-<words>", never reused. */
  id: string;
  /** The day the change was made, YYYY-MM-DD. */
  date: string;
  kind: ErratumKind;
  /** The requirement ids it added or changed. */
  requirements: string[];
  /** What 1.0 requires now, in one or two sentences. */
  summary: string;
  /** Why it changed, for an implementer of 1.0. */
  why: string;
  /** The conformance cases that check its requirements. */
  cases: string[];
  /** Each requirement's sentence as this erratum left it. */
  texts: Record<string, string>;
}

/** The file: every erratum, oldest first. */
export interface ErrataFile {
  protocol: 'tap/1.0';
  description: string;
  errata: Erratum[];
}

export const ERRATA_FILE = 'spec/1.0/errata.json';

/** What a report says of an erratum a failed case falls under. */
export interface ErratumRef {
  id: string;
  date: string;
  summary: string;
}

let cache: readonly Erratum[] | undefined;

/** The errata, oldest first; none when the file is missing (a report then names none). */
export function loadErrata(path = repoPath(ERRATA_FILE)): readonly Erratum[] {
  const isDefault = path === repoPath(ERRATA_FILE);
  if (isDefault && cache) return cache;
  const errata = existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as ErrataFile).errata : [];
  if (isDefault) cache = errata;
  return errata;
}

/**
 * True when an erratum added or changed every one of these requirements: a case that checks only
 * them holds an agent to 1.0 as amended since its first text, not to the first text itself.
 */
export function sinceFirstText(requirements: readonly string[], errata: readonly Erratum[] = loadErrata()): boolean {
  const amended = new Set(errata.filter((e) => e.kind !== 'clarified').flatMap((e) => e.requirements));
  return requirements.length > 0 && requirements.every((r) => amended.has(r));
}

/** The errata that added or changed any of these requirements, oldest first. */
export function errataOf(requirements: readonly string[], errata: readonly Erratum[] = loadErrata()): ErratumRef[] {
  const wanted = new Set(requirements);
  return errata.filter((e) => e.requirements.some((r) => wanted.has(r))).map(({ id, date, summary }) => ({ id, date, summary }));
}

/** "fails erratum E1-ver-stray-minor of 2026-12-01: A message after the ack …" */
export function failsErratum(e: ErratumRef): string {
  return `fails erratum ${e.id} of ${e.date}: ${e.summary}`;
}

/**
 * "3 of 11 failures are errata of 1.0 since its first text: an agent certified before them may
 * fail here", or null when no failure falls under an erratum.
 */
export function errataSummary(underErrata: number, failures: number): string | null {
  if (underErrata === 0) return null;
  const one = underErrata === 1;
  const counted = failures === 1 ? '1 failure' : `${underErrata} of ${failures} failures`;
  return `${counted} ${one ? 'is an erratum' : 'are errata'} of 1.0 since its first text: an agent certified before ${one ? 'it' : 'them'} may fail here`;
}
