/**
 * The errata check: every requirement of TAP 1.0 reads as its first text or as the last erratum
 * that names it recorded, every id the first text lacks is named by an erratum, and every erratum
 * names known requirements and the cases that check them (spec: conformance#traceability).
 */
import { createHash } from 'node:crypto';
import type { Erratum } from '../../conformance/errata.ts';

/** A requirement id with its sentence. */
export interface Sentence {
  id: string;
  text: string;
}

/** A conformance case as the check reads it. */
export interface CaseRequirements {
  id: string;
  requirements: readonly string[];
}

export interface ErrataSources {
  /** The errata, oldest first (spec/1.0/errata.json). */
  errata: readonly Erratum[];
  /** The first text's requirements (spec/1.0/first-text.json). */
  firstText: readonly Sentence[];
  /** The requirements as they stand (spec/1.0/requirements.json). */
  requirements: readonly Sentence[];
  /** Every case of tap-conform, in suite order. */
  cases: readonly CaseRequirements[];
}

const WRITE = 'npx tsx tools/check-errata.ts --write';

/** The cases that list any of an erratum's requirements, in suite order: what its `cases` must hold. */
export function casesOf(e: Pick<Erratum, 'requirements'>, cases: readonly CaseRequirements[]): string[] {
  const mine = new Set(e.requirements);
  return cases.filter((c) => c.requirements.some((r) => mine.has(r))).map((c) => c.id);
}

/** A sentence shortened for a message. */
function quote(text: string): string {
  return `"${text.length > 160 ? `${text.slice(0, 157)}…` : text}"`;
}

/** Problems of each erratum on its own: ids, order, requirements, texts and cases. */
function entryProblems(s: ErrataSources): string[] {
  const out: string[] = [];
  const known = new Set(s.requirements.map((r) => r.id));
  const first = new Set(s.firstText.map((r) => r.id));
  const caseById = new Map(s.cases.map((c) => [c.id, c]));
  const seen = new Map<string, number>();
  /** Requirement id → the erratum that named it first. */
  const namedBy = new Map<string, string>();
  s.errata.forEach((e, i) => {
    const at = `erratum ${e.id}`;
    const twice = seen.get(e.id);
    if (twice !== undefined)
      out.push(`${at} appears twice (entries ${twice + 1} and ${i + 1}): an id names one change; give the later entry an id of its own`);
    seen.set(e.id, i);
    const before = s.errata[i - 1];
    if (before && e.date < before.date)
      out.push(
        `${at} of ${e.date} comes after ${before.id} of ${before.date}: keep the list oldest first and add a new erratum at its end`,
      );
    for (const r of e.requirements) {
      if (!known.has(r)) out.push(`${at} names ${r}, which is not in spec/1.0/requirements.json: fix the id (or run npm run requirements)`);
      if (!(r in e.texts))
        out.push(`${at} names ${r} but records no text for it: add "${r}": "<its sentence from requirements.json>" to its texts`);
      if (e.kind === 'added') {
        const earlier = first.has(r) ? 'the first text' : namedBy.get(r);
        if (earlier) out.push(`${at} is of kind added, but ${r} is already in ${earlier}: make its kind changed (or clarified)`);
      }
      if (!namedBy.has(r)) namedBy.set(r, `erratum ${e.id}`);
    }
    for (const r of Object.keys(e.texts))
      if (!e.requirements.includes(r))
        out.push(`${at} records the text of ${r} but does not name it in its requirements: add it there or drop the text`);
    for (const id of e.cases) {
      const c = caseById.get(id);
      if (!c) out.push(`${at} names case ${id}, which tap-conform does not have: fix the case id (${WRITE} fills the cases)`);
      else if (!c.requirements.some((r) => e.requirements.includes(r)))
        out.push(
          `${at} names case ${id}, which lists none of ${e.requirements.join(', ')} (it lists ${c.requirements.join(', ') || 'none'}): drop it from the erratum's cases, or give the case the requirement it checks`,
        );
    }
    const missing = casesOf(e, s.cases).filter((id) => !e.cases.includes(id));
    if (missing.length)
      out.push(
        `${at} does not name ${missing.length === 1 ? 'case' : 'cases'} ${missing.join(', ')}, which check its requirements: run ${WRITE}`,
      );
  });
  return out;
}

/** Problems of each requirement: its id and sentence must be the first text's or an erratum's. */
function requirementProblems(s: ErrataSources): string[] {
  const out: string[] = [];
  const first = new Map(s.firstText.map((r) => [r.id, r.text]));
  const now = new Map(s.requirements.map((r) => [r.id, r.text]));
  // The last erratum that names each requirement and records its text: the text it must read.
  const last = new Map<string, Erratum>();
  for (const e of s.errata) for (const r of e.requirements) if (r in e.texts) last.set(r, e);
  for (const r of s.requirements) {
    const e = last.get(r.id);
    const recorded = e ? e.texts[r.id]! : first.get(r.id);
    if (recorded === undefined) {
      out.push(
        `${r.id} is not in the first text of 1.0 and no erratum names it: add an erratum of kind added to spec/1.0/errata.json (id, date, summary, why, and its text), then run ${WRITE}`,
      );
      continue;
    }
    if (recorded !== r.text) {
      const source = e ? `erratum ${e.id} recorded` : 'the first text of 1.0 said';
      out.push(
        `${r.id} no longer reads as ${source}, and no later erratum records the change: add an erratum of kind changed (or clarified, when what it asks is the same) with its new text. Now: ${quote(r.text)}; recorded: ${quote(recorded)}`,
      );
    }
  }
  for (const [id] of first)
    if (!now.has(id))
      out.push(
        `${id} of the first text is no longer in spec/1.0/requirements.json: a 1.0 requirement is never removed; restore it (an erratum may change its sentence)`,
      );
  return out;
}

/** Every problem of the errata against the first text, the requirement index and the cases; none when they agree. */
export function checkErrata(s: ErrataSources): string[] {
  return [...entryProblems(s), ...requirementProblems(s)];
}

/** The errata with each one's cases set to the cases that check its requirements. */
export function withDerivedCases<T extends Erratum>(errata: readonly T[], cases: readonly CaseRequirements[]): T[] {
  return errata.map((e) => ({ ...e, cases: casesOf(e, cases) }));
}

/** Counts for the summary line: errata, requirement ids they name, and how many of those the first text lacks. */
export function tallyErrata(s: Pick<ErrataSources, 'errata' | 'firstText'>): {
  errata: number;
  ids: number;
  added: number;
  changed: number;
} {
  const first = new Set(s.firstText.map((r) => r.id));
  const ids = new Set(s.errata.flatMap((e) => e.requirements));
  const added = [...ids].filter((id) => !first.has(id)).length;
  return { errata: s.errata.length, ids: ids.size, added, changed: ids.size - added };
}

/**
 * The SHA-256 of the first text's requirements (JSON.stringify of their list) as derived from
 * commit 037294e: the record is frozen, and an edit to it fails the check.
 */
export const FIRST_TEXT_SHA256 = '9d7e68e5004d0da1c17e7ce7042a5d4845979412c68e9044da0ac7c963abed99';

/** Whether spec/1.0/first-text.json still holds the frozen record of the first text. */
export function firstTextProblems(firstText: readonly Sentence[]): string[] {
  const digest = createHash('sha256')
    .update(JSON.stringify(firstText.map(({ id, text }) => ({ id, text }))))
    .digest('hex');
  if (digest === FIRST_TEXT_SHA256) return [];
  return [
    `spec/1.0/first-text.json no longer holds the first 1.0 text (its requirements hash to ${digest.slice(0, 12)}…, the frozen record to ${FIRST_TEXT_SHA256.slice(0, 12)}…): restore it with git checkout; a change since the first text is an erratum in errata.json, never an edit of this file`,
  ];
}
