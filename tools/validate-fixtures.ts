/**
 * Validates the language-neutral fixtures against schemas/v1: valid messages pass, invalid ones
 * fail with the keyword and path their sidecar names, raw frames decode to the expected error,
 * and every golden transcript validates line by line and obeys the history rules.
 *
 *   npx tsx tools/validate-fixtures.ts [--verbose]
 *
 * The loaders and checks are exported for test/fixtures.test.ts and test/transcripts.test.ts.
 */
import { pathToFileURL } from 'node:url';
import {
  catalogueTypes,
  checkDocument,
  checkInvalid,
  checkTranscriptFixture,
  checkValid,
  createAjv,
  invalidFixtures,
  orphanSidecars,
  REQUIRED_TRANSCRIPTS,
  transcriptFixtures,
  validFixtures,
  workspaceFixtures,
} from './fixtures/fixtures.ts';

export * from './fixtures/decode-strict.ts';
export * from './fixtures/fixtures.ts';

/** Runs every check and prints a summary; exit status 1 when anything fails. */
function main(): void {
  const verbose = process.argv.includes('--verbose');
  const ajv = createAjv();
  let failures = 0;
  const report = (what: string, problems: string[]) => {
    if (problems.length) {
      failures++;
      console.log(`FAIL ${what}`);
      for (const p of problems) console.log(`     ${p}`);
    } else if (verbose) console.log(`ok   ${what}`);
  };
  const valid = validFixtures();
  const invalid = invalidFixtures();
  const transcripts = transcriptFixtures();
  const documents = workspaceFixtures();
  for (const f of valid) report(f.file, checkValid(ajv, f));
  for (const f of [...documents.valid, ...documents.invalid]) report(f.file, checkDocument(ajv, f));
  for (const f of invalid) report(f.file, checkInvalid(ajv, f));
  for (const t of transcripts) report(t.file, checkTranscriptFixture(ajv, t));
  for (const o of orphanSidecars()) report(o, ['no fixture beside this sidecar']);
  const types = new Set(valid.map((f) => f.type));
  report(
    'every message type has a valid fixture',
    catalogueTypes()
      .filter((t) => !types.has(t))
      .map((t) => `no fixtures/messages/${t}/`),
  );
  const names = new Set(transcripts.map((t) => t.name));
  report(
    'every required transcript exists',
    REQUIRED_TRANSCRIPTS.filter((n) => !names.has(n)).map((n) => `no fixtures/transcripts/${n}.ndjson`),
  );
  console.log(
    `${valid.length} valid messages, ${invalid.length} invalid (${invalid.filter((f) => f.raw).length} raw frames), ` +
      `${transcripts.length} transcripts (${transcripts.reduce((n, t) => n + t.lines.length, 0)} lines), ` +
      `${documents.valid.length + documents.invalid.length} workspace documents: ` +
      (failures ? `${failures} failing` : 'all pass'),
  );
  if (failures) {
    console.log('Fix the fixture or its .expect.json sidecar; rerun with --verbose to list every file checked.');
    process.exitCode = 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
