/**
 * The requirement index: reads the normative chapters (spec/1.0/*.md), extracts every
 * requirement sentence with its id, level and anchor, and writes spec/1.0/requirements.json.
 * With --check it writes nothing and fails when the file is out of date. Either way it fails
 * when the chapters are malformed, naming file and line: a duplicate id, a normative keyword
 * without an id, an id without a keyword, a heading without an anchor, a duplicate anchor, or
 * a broken link (spec: conventions#requirement-ids). With --cites it also fails on citations
 * in code comments that name no chapter or anchor.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { brokenCites, parseSpec, renderRequirements, SPEC_DIR, tally } from './requirements/spec.ts';

export * from './requirements/chapter.ts';
export * from './requirements/spec.ts';

function main(): number {
  const { values } = parseArgs({
    options: {
      check: { type: 'boolean', default: false },
      cites: { type: 'boolean', default: false },
      dir: { type: 'string', default: SPEC_DIR },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(
      'usage: npx tsx tools/requirements.ts [--check] [--cites] [--dir spec/1.0]\n' +
        '  (no option)  write spec/1.0/requirements.json from the chapters\n' +
        '  --check      write nothing; fail if requirements.json is out of date\n' +
        '  --cites      also fail on "spec: chapter#anchor" comments in the code that do not resolve\n',
    );
    return 0;
  }
  const dir = resolve(values.dir!);
  const index = parseSpec(dir);
  for (const p of index.problems) process.stderr.write(`${p.file}:${p.line}: ${p.message}\n`);
  if (index.problems.length > 0) {
    process.stderr.write(`${index.problems.length} problem(s) in the spec; fix them and run again.\n`);
    return 1;
  }
  if (values.cites) {
    const broken = brokenCites(index);
    for (const b of broken) process.stderr.write(`${b.file}:${b.line}: "spec: ${b.cite}" names no chapter or anchor of spec/1.0\n`);
    if (broken.length > 0) {
      process.stderr.write(`${broken.length} broken spec citation(s); cite as <chapter>#<anchor>, e.g. tasks#sequences.\n`);
      return 1;
    }
  }
  const out = join(dir, 'requirements.json');
  const text = renderRequirements(index.requirements);
  const { levels } = tally(index.requirements);
  const summary = `${index.requirements.length} requirements (MUST ${levels.MUST}, SHOULD ${levels.SHOULD}, MAY ${levels.MAY})`;
  if (values.check) {
    const current = existsSync(out) ? readFileSync(out, 'utf8') : '';
    if (current !== text) {
      process.stderr.write(`${relative(process.cwd(), out)} is out of date with the chapters; run: npx tsx tools/requirements.ts\n`);
      return 1;
    }
    process.stdout.write(`${summary}: requirements.json is up to date\n`);
    return 0;
  }
  writeFileSync(out, text);
  process.stdout.write(`${summary} written to ${relative(process.cwd(), out)}\n`);
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  try {
    process.exitCode = main();
  } catch (err) {
    process.stderr.write(`requirements: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
