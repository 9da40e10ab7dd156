import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ErrataFile, Erratum } from '../../conformance/errata.ts';
import { repoPath } from '../../conformance/paths.ts';
import { allCases } from '../check-coverage.ts';
import { BEGIN, changelogProblems, changelogSection, END, withChangelogSection } from './changelog.ts';
import { checkErrata, firstTextProblems, type Sentence, tallyErrata, withDerivedCases } from './check.ts';
import { ErrataFileSchema, type FirstText, FirstTextSchema, schemaProblems } from './schema.ts';

const json = <T>(file: string): T => JSON.parse(readFileSync(repoPath(file), 'utf8')) as T;

/** The sources of the check, each one a list a test may change. */
interface World {
  errata: Erratum[];
  firstText: Sentence[];
  requirements: Sentence[];
  cases: { id: string; requirements: string[] }[];
}

/** A small world that agrees: TAP-ENV-001 of the first text changed by E1-env-changed, TAP-ENV-002 added by E1-env-added. */
function world(): World {
  const erratum = (over: Partial<Erratum> & Pick<Erratum, 'id' | 'requirements' | 'texts'>): Erratum => ({
    date: '2026-12-01',
    kind: 'added',
    summary: 'What the requirement asks for now.',
    why: 'Why it had to change for implementers.',
    cases: [],
    ...over,
  });
  return {
    firstText: [
      { id: 'TAP-ENV-001', text: 'A peer MUST do one thing.' },
      { id: 'TAP-ENV-003', text: 'A peer MUST do a third thing.' },
    ],
    requirements: [
      { id: 'TAP-ENV-001', text: 'A peer MUST do one thing, twice.' },
      { id: 'TAP-ENV-002', text: 'A peer MUST do another thing.' },
      { id: 'TAP-ENV-003', text: 'A peer MUST do a third thing.' },
    ],
    cases: [
      { id: 'core.one', requirements: ['TAP-ENV-001'] },
      { id: 'core.two', requirements: ['TAP-ENV-002', 'TAP-ENV-003'] },
      { id: 'core.three', requirements: ['TAP-ENV-003'] },
    ],
    errata: [
      erratum({
        id: 'E1-env-added',
        requirements: ['TAP-ENV-002'],
        texts: { 'TAP-ENV-002': 'A peer MUST do another thing.' },
        cases: ['core.two'],
      }),
      erratum({
        id: 'E1-env-changed',
        date: '2026-12-02',
        kind: 'changed',
        requirements: ['TAP-ENV-001'],
        texts: { 'TAP-ENV-001': 'A peer MUST do one thing, twice.' },
        cases: ['core.one'],
      }),
    ],
  };
}

describe('the errata check (spec: conformance#traceability)', () => {
  it('passes errata that account for every id and sentence beyond the first text and name the cases that check them', () => {
    expect(checkErrata(world())).toEqual([]);
  });

  it('fails a requirement id that is not in the first text when no erratum names it', () => {
    const w = world();
    w.requirements.push({ id: 'TAP-ENV-004', text: 'A peer MUST do a fourth thing.' });
    expect(checkErrata(w)).toEqual([
      expect.stringMatching(/^TAP-ENV-004 is not in the first text of 1\.0 and no erratum names it: add an erratum/),
    ]);
  });

  it('fails a sentence that differs from the first text when no erratum records the change', () => {
    const w = world();
    w.requirements[2] = { id: 'TAP-ENV-003', text: 'A peer MUST NOT do a third thing.' };
    const problems = checkErrata(w);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^TAP-ENV-003 no longer reads as the first text of 1\.0 said/);
    expect(problems[0]).toContain('Now: "A peer MUST NOT do a third thing."');
  });

  it('fails a later edit of a sentence an erratum recorded, and passes once a later erratum records it', () => {
    const w = world();
    w.requirements[0] = { id: 'TAP-ENV-001', text: 'A peer MUST do one thing, three times.' };
    expect(checkErrata(w)).toEqual([expect.stringMatching(/^TAP-ENV-001 no longer reads as erratum E1-env-changed recorded/)]);
    w.errata.push({
      ...w.errata[1]!,
      id: 'E1-env-changed-again',
      date: '2026-12-03',
      texts: { 'TAP-ENV-001': 'A peer MUST do one thing, three times.' },
    });
    expect(checkErrata(w)).toEqual([]);
  });

  it('judges a sentence by the last erratum that names it, not by the first', () => {
    const w = world();
    // E1-env-added recorded TAP-ENV-002 as added; a later erratum changed it and the index follows the later one.
    w.requirements[1] = { id: 'TAP-ENV-002', text: 'A peer MUST do another thing at once.' };
    w.errata.push({
      ...w.errata[0]!,
      id: 'E1-env-at-once',
      date: '2026-12-04',
      kind: 'changed',
      texts: { 'TAP-ENV-002': 'A peer MUST do another thing at once.' },
    });
    expect(checkErrata(w)).toEqual([]);
  });

  it('fails an erratum that names a requirement the index does not have', () => {
    const w = world();
    w.errata[0]!.requirements.push('TAP-ENV-009');
    w.errata[0]!.texts['TAP-ENV-009'] = 'A peer MUST do a ninth thing.';
    expect(checkErrata(w)).toEqual([
      expect.stringMatching(/^erratum E1-env-added names TAP-ENV-009, which is not in spec\/1\.0\/requirements\.json/),
    ]);
  });

  it('fails an erratum that names a case tap-conform does not have', () => {
    const w = world();
    w.errata[0]!.cases.push('core.nowhere');
    expect(checkErrata(w)).toEqual([
      expect.stringMatching(/^erratum E1-env-added names case core\.nowhere, which tap-conform does not have/),
    ]);
  });

  it('fails an erratum that names a case which does not list its requirement', () => {
    const w = world();
    w.errata[0]!.cases.push('core.three');
    expect(checkErrata(w)).toEqual([
      expect.stringMatching(/^erratum E1-env-added names case core\.three, which lists none of TAP-ENV-002 \(it lists TAP-ENV-003\)/),
    ]);
  });

  it('fails an erratum that leaves out a case whose requirements list its requirement', () => {
    const w = world();
    w.cases.push({ id: 'core.four', requirements: ['TAP-ENV-002'] });
    expect(checkErrata(w)).toEqual([
      expect.stringMatching(
        /^erratum E1-env-added does not name case core\.four, which check its requirements: run npx tsx tools\/check-errata\.ts --write/,
      ),
    ]);
  });

  it('fails an erratum that names a requirement without recording its sentence, or records one it does not name', () => {
    const w = world();
    delete w.errata[0]!.texts['TAP-ENV-002'];
    w.errata[0]!.texts['TAP-ENV-003'] = 'A peer MUST do a third thing.';
    const problems = checkErrata(w);
    expect(problems).toContainEqual(expect.stringMatching(/^erratum E1-env-added names TAP-ENV-002 but records no text for it/));
    expect(problems).toContainEqual(expect.stringMatching(/^erratum E1-env-added records the text of TAP-ENV-003 but does not name it/));
    // With no recorded sentence, the id is accounted for by no erratum either.
    expect(problems).toContainEqual(expect.stringMatching(/^TAP-ENV-002 is not in the first text/));
  });

  it('fails an erratum of kind added that names a requirement of the first text or of an earlier erratum', () => {
    const w = world();
    w.errata[1]!.kind = 'added';
    expect(checkErrata(w)).toEqual([
      expect.stringMatching(/^erratum E1-env-changed is of kind added, but TAP-ENV-001 is already in the first text/),
    ]);
    const v = world();
    v.errata.push({ ...v.errata[0]!, id: 'E1-env-added-again', date: '2026-12-05' });
    expect(checkErrata(v)).toEqual([
      expect.stringMatching(/^erratum E1-env-added-again is of kind added, but TAP-ENV-002 is already in erratum E1-env-added/),
    ]);
  });

  it('fails two errata with one id, and a list that is not oldest first', () => {
    const w = world();
    w.errata[1]!.id = 'E1-env-added';
    expect(checkErrata(w)).toContainEqual(expect.stringMatching(/^erratum E1-env-added appears twice \(entries 1 and 2\)/));
    const v = world();
    v.errata[1]!.date = '2026-11-30';
    expect(checkErrata(v)).toEqual([expect.stringMatching(/^erratum E1-env-changed of 2026-11-30 comes after E1-env-added of 2026-12-01/)]);
  });

  it('fails a requirement of the first text that is gone from the index', () => {
    const w = world();
    w.requirements.splice(2, 1);
    w.cases = w.cases.map((c) => ({ ...c, requirements: c.requirements.filter((r) => r !== 'TAP-ENV-003') }));
    w.cases.pop();
    expect(checkErrata(w)).toEqual([
      expect.stringMatching(/^TAP-ENV-003 of the first text is no longer in spec\/1\.0\/requirements\.json/),
    ]);
  });

  it("derives each erratum's cases from the cases' own requirement lists, in suite order", () => {
    const w = world();
    w.cases.push({ id: 'core.zero', requirements: ['TAP-ENV-001', 'TAP-ENV-002'] });
    const derived = withDerivedCases(w.errata, w.cases);
    expect(derived.map((e) => e.cases)).toEqual([
      ['core.two', 'core.zero'],
      ['core.one', 'core.zero'],
    ]);
    expect(checkErrata({ ...w, errata: derived })).toEqual([]);
  });
});

describe('the frozen first text and the schema of errata.json', () => {
  const first = json<FirstText>('spec/1.0/first-text.json');

  it('holds the 262 requirements of the first 1.0 text, and fails when one of its sentences is edited', () => {
    expect(schemaProblems(FirstTextSchema, first, 'first-text.json')).toEqual([]);
    expect(first.requirements).toHaveLength(262);
    expect(firstTextProblems(first.requirements)).toEqual([]);
    const edited = first.requirements.map((r, i) => (i === 10 ? { ...r, text: `${r.text} ` } : r));
    expect(firstTextProblems(edited)).toEqual([expect.stringMatching(/^spec\/1\.0\/first-text\.json no longer holds the first 1\.0 text/)]);
    expect(firstTextProblems(first.requirements.slice(1))).toHaveLength(1);
  });

  it('refuses an erratum of an unknown kind, with a member of its own, or without its texts', () => {
    const good: ErrataFile = { protocol: 'tap/1.0', description: 'test', errata: world().errata };
    expect(schemaProblems(ErrataFileSchema, good, 'errata.json')).toEqual([]);
    const bad = structuredClone(good) as unknown as { errata: Record<string, unknown>[] };
    bad.errata[0]!.kind = 'removed';
    bad.errata[1]!.note = 'x';
    delete bad.errata[1]!.texts;
    const problems = schemaProblems(ErrataFileSchema, bad, 'errata.json');
    expect(problems).toContainEqual(expect.stringMatching(/^errata\.json\/errata\/0\/kind: /));
    expect(problems).toContainEqual('errata.json/errata/1: must NOT have additional properties (note)');
    expect(problems).toContainEqual("errata.json/errata/1: must have required property 'texts'");
  });
});

describe('the CHANGELOG states the errata from errata.json', () => {
  const errata = world().errata;
  const changelog = `# Changelog\n\n### Errata of TAP 1.0\n${BEGIN}\n${END}\n\nE1-env-added is mentioned here.\n`;

  it('writes one line per erratum between the markers, and then finds nothing wrong', () => {
    const written = withChangelogSection(changelog, errata);
    expect(written).toContain('- **E1-env-changed** (2026-12-02, changed: TAP-ENV-001): What the requirement asks for now.');
    expect(changelogSection(errata)).toMatch(/^2 normative changes to TAP 1\.0/);
    expect(changelogProblems(written, errata)).toEqual([]);
  });

  it('fails a section out of date, an erratum id the list lacks, and a changelog without markers', () => {
    const written = withChangelogSection(changelog, errata);
    expect(changelogProblems(written, errata.slice(0, 1))).toEqual([
      expect.stringMatching(/^the errata section of CHANGELOG\.md is out of date/),
      expect.stringMatching(/^CHANGELOG\.md names erratum E1-env-changed, which spec\/1\.0\/errata\.json does not have/),
    ]);
    expect(changelogProblems(written.replace('E1-env-added is', 'E1-env-typo is'), errata)).toEqual([
      expect.stringMatching(/^CHANGELOG\.md names erratum E1-env-typo/),
    ]);
    expect(changelogProblems('# Changelog\n', errata)).toEqual([expect.stringMatching(/^CHANGELOG\.md has no errata section/)]);
  });
});

describe('the errata of this repository', () => {
  it('are valid, account for every requirement beyond the first text, name their cases, and are stated in CHANGELOG.md', async () => {
    const doc = json<ErrataFile>('spec/1.0/errata.json');
    const first = json<FirstText>('spec/1.0/first-text.json');
    const requirements = json<{ requirements: { id: string; text: string }[] }>('spec/1.0/requirements.json').requirements;
    const cases = (await allCases()).map((c) => ({ id: c.id, requirements: c.requirements }));
    expect(schemaProblems(ErrataFileSchema, doc, 'errata.json')).toEqual([]);
    expect(checkErrata({ errata: doc.errata, firstText: first.requirements, requirements, cases })).toEqual([]);
    expect(changelogProblems(readFileSync(repoPath('CHANGELOG.md'), 'utf8'), doc.errata)).toEqual([]);
    const t = tallyErrata({ errata: doc.errata, firstText: first.requirements });
    // Every id beyond the first text is named, and every sentence of the first text that changed.
    expect(t.added).toBe(requirements.length - first.requirements.length);
    expect(t.changed).toBe(first.requirements.filter((r) => requirements.find((x) => x.id === r.id)?.text !== r.text).length);
  });
});
