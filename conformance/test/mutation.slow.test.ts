/**
 * The mutation score stays honest (spec: conformance#traceability): a handful of mutants of the
 * reference agent, each breaking one requirement, are run through tools/mutation.ts in memory,
 * and each must be caught by a case that cites the requirement it breaks. The unbroken agent,
 * run first as the baseline, must pass those cases, so every catch comes from the mutation.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ALL_CASES } from '../cases/index.ts';
import { repoPath } from '../paths.ts';
import { MUTANTS } from '../mutation/mutants.ts';
import { runMutation } from '../../tools/mutation.ts';

const SAMPLE = [
  'TAP-INT-001:forged-source-obeyed',
  'TAP-ERR-001:retryable-flipped',
  'TAP-HS-019:duplicate-capability',
  'TAP-TASK-013:unknown-task-code',
  'TAP-EVT-005:out-of-order',
  'TAP-CAN-006:cancel-after-cancelled',
  // The worked example of ARCHITECTURE.md ("How to add a mutant").
  'TAP-ERR-003:no-reply-to',
];

describe('the mutants', () => {
  it('number at least 150, each named <requirement id>:<how> after a requirement that a case cites', () => {
    expect(MUTANTS.length).toBeGreaterThanOrEqual(150);
    expect(new Set(MUTANTS.map((m) => m.id)).size).toBe(MUTANTS.length);
    const cited = new Set(ALL_CASES.flatMap((c) => c.requirements));
    for (const m of MUTANTS) {
      expect(m.id).toMatch(/^TAP-[A-Z]+-\d{3}:[a-z0-9-]+$/);
      expect(cited.has(m.requirement), `${m.id}: no case cites ${m.requirement}`).toBe(true);
    }
  });
});

interface Entry {
  id: string;
  mutant?: string | null;
  reason: string;
}

const readJson = <T>(file: string): T => JSON.parse(readFileSync(repoPath(file), 'utf8')) as T;

describe('the mutants against the requirements (spec: conformance#traceability)', () => {
  const musts = ['spec/1.0/requirements.json', 'spec/1.1/requirements.json']
    .flatMap((file) => readJson<{ requirements: { id: string; level: string }[] }>(file).requirements)
    .filter((r) => r.level === 'MUST')
    .map((r) => r.id);
  const cited = new Set(ALL_CASES.flatMap((c) => c.requirements));
  const targeted = new Set(MUTANTS.map((m) => m.requirement));
  // An entry { id, mutant: null, reason } says why no wire mutant can break a requirement.
  const noMutant = new Map(
    readJson<Entry[]>('conformance/untestable.json')
      .filter((e) => e.mutant === null)
      .map((e) => [e.id, e.reason]),
  );

  it('break every MUST that a case cites, or conformance/untestable.json says why none can', () => {
    const missing = musts.filter((id) => cited.has(id) && !targeted.has(id) && !noMutant.has(id));
    expect(
      missing,
      `MUSTs cited by a case that no mutant breaks: ${missing.join(', ')}; add a row to conformance/mutation/mutants/<chapter>.ts, or an entry { id, mutant: null, reason } to conformance/untestable.json`,
    ).toEqual([]);
  });

  it('leave no reason standing for a requirement that has a mutant or no citing case', () => {
    for (const [id, reason] of noMutant) {
      expect(targeted.has(id), `conformance/untestable.json says no mutant can break ${id}, but ${id} has one`).toBe(false);
      expect(cited.has(id) && musts.includes(id), `conformance/untestable.json names ${id}, which is no MUST a case cites`).toBe(true);
      expect(reason.trim().length, `conformance/untestable.json gives no real reason why ${id} has no mutant`).toBeGreaterThan(40);
    }
  });
});

describe('tools/mutation.ts', () => {
  it('catches each sampled mutant with a case citing the requirement it breaks', { timeout: 30_000 }, async () => {
    const report = await runMutation({ only: SAMPLE, scope: 'citing', jobs: 2 });
    expect(report.results.map((r) => r.id).sort()).toEqual([...SAMPLE].sort());
    for (const r of report.results) {
      expect(r.fired, `${r.id} never changed a message`).toBeGreaterThan(0);
      expect(r.citing, `${r.id} was not caught by a case citing ${r.requirement}`).not.toEqual([]);
      for (const id of r.citing) expect(ALL_CASES.find((c) => c.id === id)?.requirements).toContain(r.requirement);
    }
    expect(report.caught_by_citing).toBe(SAMPLE.length);
    expect(report.survivors).toEqual([]);
  });
});
