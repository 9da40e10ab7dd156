/**
 * The errata of TAP 1.0 as one checked list (spec/1.0/errata.json). Fails (exit 1), naming each
 * problem and what to do, when: a requirement id is not in the first text (spec/1.0/first-text.json)
 * and no erratum names it; a requirement's sentence differs from the first text, or from the last
 * erratum that recorded it, with no erratum recording the change; an erratum names an unknown
 * requirement or case, a case that does not list its requirement, or misses a case that does; the
 * file fails its schema (tools/errata/errata.schema.json); the first text's record was edited; or the
 * errata section of CHANGELOG.md is out of date.
 *
 * With --write it first writes what is derived: each erratum's cases (from the cases' own
 * requirement lists), the CHANGELOG section and the schema file.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { ERRATA_FILE, type ErrataFile } from '../conformance/errata.ts';
import { repoPath } from '../conformance/paths.ts';
import { allCases } from './check-coverage.ts';
import { changelogProblems, withChangelogSection } from './errata/changelog.ts';
import { type CaseRequirements, checkErrata, firstTextProblems, type Sentence, tallyErrata, withDerivedCases } from './errata/check.ts';
import { ErrataFileSchema, errataSchemaJson, type FirstText, FirstTextSchema, schemaProblems } from './errata/schema.ts';

export const FIRST_TEXT_FILE = 'spec/1.0/first-text.json';
export const SCHEMA_FILE = 'tools/errata/errata.schema.json';
const CHANGELOG = 'CHANGELOG.md';

function read(file: string): string {
  return readFileSync(repoPath(file), 'utf8');
}

/** The text of errata.json for a list: 2-space JSON, as --write leaves it. */
export function renderErrata(doc: ErrataFile): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { write: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) {
    process.stdout.write(
      'usage: npx tsx tools/check-errata.ts [--write]\n' +
        '  (no option)  check spec/1.0/errata.json against the first text, requirements.json, the cases and CHANGELOG.md\n' +
        "  --write      first write each erratum's cases, the CHANGELOG section and the schema file, then check\n",
    );
    return 0;
  }
  const problems: string[] = [];
  const doc = JSON.parse(read(ERRATA_FILE)) as ErrataFile;
  const firstText = JSON.parse(read(FIRST_TEXT_FILE)) as FirstText;
  problems.push(...schemaProblems(ErrataFileSchema, doc, ERRATA_FILE), ...schemaProblems(FirstTextSchema, firstText, FIRST_TEXT_FILE));
  if (problems.length > 0) return report(problems);
  const requirements = (JSON.parse(read('spec/1.0/requirements.json')) as { requirements: Sentence[] }).requirements;
  const cases: CaseRequirements[] = (await allCases()).map((c) => ({ id: c.id, requirements: c.requirements }));

  if (values.write) {
    doc.errata = withDerivedCases(doc.errata, cases);
    writeFileSync(repoPath(ERRATA_FILE), renderErrata(doc));
    writeFileSync(repoPath(CHANGELOG), withChangelogSection(read(CHANGELOG), doc.errata));
    writeFileSync(repoPath(SCHEMA_FILE), errataSchemaJson());
    process.stdout.write(`wrote the cases of ${ERRATA_FILE}, the errata section of ${CHANGELOG} and ${SCHEMA_FILE}\n`);
  }

  problems.push(...firstTextProblems(firstText.requirements));
  problems.push(...checkErrata({ errata: doc.errata, firstText: firstText.requirements, requirements, cases }));
  problems.push(...changelogProblems(read(CHANGELOG), doc.errata));
  const schemaFile = repoPath(SCHEMA_FILE);
  if (!existsSync(schemaFile) || readFileSync(schemaFile, 'utf8') !== errataSchemaJson())
    problems.push(`${SCHEMA_FILE} is out of date with tools/errata/schema.ts: run npx tsx tools/check-errata.ts --write`);
  if (problems.length > 0) return report(problems);
  const t = tallyErrata({ errata: doc.errata, firstText: firstText.requirements });
  process.stdout.write(
    `${t.errata} errata name ${t.ids} requirement ids (${t.added} added since the first text's ${firstText.requirements.length}, ${t.changed} of its own changed); ` +
      `${requirements.length} requirements and ${cases.length} cases agree with them\n`,
  );
  return 0;
}

function report(problems: string[]): 1 {
  for (const p of problems) process.stderr.write(`errata: ${p}\n`);
  process.stderr.write(`${problems.length} problem(s) with the errata of TAP 1.0 (${relative(process.cwd(), repoPath(ERRATA_FILE))}).\n`);
  return 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  try {
    process.exitCode = await main();
  } catch (err) {
    process.stderr.write(`errata: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
