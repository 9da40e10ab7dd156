import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { validateAgainst as validateWithHarness } from '../conformance/schemas.ts';
import { SCHEMA_BUNDLE } from '../reference/core/schema-bundle.ts';
import { toIssues, validateAgainst } from '../reference/core/validate.ts';
import { catalogueTypes, invalidFixtures, transcriptFixtures, validFixtures, workspaceFixtures } from '../tools/validate-fixtures.ts';
import { ajvJudge, type Case, cfworkerJudge, type Judge, type Loading, pythonMissing, pythonVerdicts } from './validators.testkit.ts';

const ROOT = new URL('..', import.meta.url).pathname;

/** Every case with the verdict the fixtures demand: valid messages, invalid ones, transcript lines, workspace documents. */
function casesWithVerdicts(): { cases: Case[]; want: boolean[] } {
  const types = new Set(catalogueTypes());
  const cases: Case[] = [];
  const want: boolean[] = [];
  const add = (label: string, schema: string, instance: unknown, valid: boolean) => {
    cases.push({ label: `${label} against ${schema}`, schema, instance });
    want.push(valid);
  };
  for (const f of validFixtures()) {
    add(f.file, `${f.type}.schema.json`, f.message, true);
    add(f.file, 'message.schema.json', f.message, true);
  }
  for (const f of invalidFixtures().filter((x) => !x.raw)) {
    const message = JSON.parse(new TextDecoder().decode(f.bytes)) as unknown;
    add(f.file, 'message.schema.json', message, false);
    add(f.file, f.folder === 'envelope' ? 'envelope.schema.json' : `${f.folder}.schema.json`, message, false);
  }
  for (const t of transcriptFixtures())
    t.lines.forEach((line, i) => {
      const m = (line as { message?: { type?: string } }).message;
      if (!m) return;
      add(`${t.file} line ${i + 1}`, types.has(String(m.type)) ? `${m.type}.schema.json` : 'message.schema.json', m, true);
      add(`${t.file} line ${i + 1}`, 'message.schema.json', m, true);
    });
  const docs = workspaceFixtures();
  for (const f of docs.valid) add(f.file, f.schema, f.value, true);
  for (const f of docs.invalid) add(f.file, f.schema, f.value, false);
  return { cases, want };
}

const { cases, want } = casesWithVerdicts();

/** The cases where a validator's verdict differs from the fixtures', as readable lines. */
const disagreements = (got: boolean[]) =>
  got.flatMap((v, i) =>
    v === want[i] ? [] : [`${cases[i]!.label}: ${v ? 'accepted' : 'refused'}, fixtures say ${want[i] ? 'valid' : 'invalid'}`],
  );

/** The bypasses every validator must refuse: a line feed before "..", a trailing line feed, "yesterday Z", a space for "T". */
const bypasses: Case[] = [
  { label: 'artifact', schema: 'task-record.schema.json', instance: recordWithArtifact('a\n/../../etc/passwd') },
  { label: 'artifact', schema: 'task-record.schema.json', instance: recordWithArtifact('a\r/../x') },
  { label: 'artifact', schema: 'task-record.schema.json', instance: recordWithArtifact('a\u2028/../x') },
  { label: 'identifier', schema: 'identifier.schema.json', instance: 'task-1\n' },
  { label: 'timestamp', schema: 'envelope.schema.json', instance: { ...validFixtures()[0]!.message, timestamp: 'yesterday Z' } },
  {
    label: 'timestamp',
    schema: 'envelope.schema.json',
    instance: { ...validFixtures()[0]!.message, timestamp: '2025-03-14 09:26:50Z' },
  },
];

const PYTHON_NAME = "python-jsonschema (Debian's python3-jsonschema, formats not asserted)";
const pythonProblem = pythonMissing();
/** python-jsonschema judges some thousand instances in about 12 s of CPU: on a loaded machine that is more than the default 30 s. */
const PYTHON_TIMEOUT_MS = 180_000;
/**
 * python-jsonschema judges the fixtures and the bypasses in one child process per loading, started
 * here so that it runs while the JavaScript validators are tested.
 */
const pythonRuns = new Map(
  (['files', 'bundle'] as const).map((loading) => {
    const run = pythonProblem ? Promise.reject(new Error(pythonProblem)) : pythonVerdicts(loading, [...cases, ...bypasses]);
    run.catch(() => {});
    return [loading, run.then((v) => ({ fixtures: v.slice(0, cases.length), bypasses: v.slice(cases.length) }))] as const;
  }),
);

const judges: [string, (l: Loading) => Judge][] = [
  ['Ajv 2020 (strict, discriminator, ajv-formats)', ajvJudge],
  ['@cfworker/json-schema (2020-12)', cfworkerJudge],
];

describe('cross-validator agreement: three validators, two loadings, one verdict per fixture (spec: envelope#identifiers)', () => {
  it('covers valid and invalid messages, every transcript line and the workspace documents', () => {
    expect(want.filter(Boolean).length).toBeGreaterThan(300);
    expect(want.filter((v) => !v).length).toBeGreaterThan(250);
    expect(cases.some((c) => c.label.includes('fixtures/transcripts/'))).toBe(true);
    expect(cases.some((c) => c.label.includes('artifact-line-feed-traversal'))).toBe(true);
  });

  for (const loading of ['files', 'bundle'] as const) {
    const how = loading === 'files' ? 'the separate files' : 'bundle.json alone';
    for (const [name, judge] of judges)
      it(`${name}, loading ${how}, agrees with every fixture`, () => {
        expect(disagreements(judge(loading)(cases))).toEqual([]);
      });
    it(
      `${PYTHON_NAME}, loading ${how}, agrees with every fixture`,
      async () => {
        if (pythonProblem) expect.fail(pythonProblem);
        expect(disagreements((await pythonRuns.get(loading)!).fixtures)).toEqual([]);
      },
      PYTHON_TIMEOUT_MS,
    );
  }

  /**
   * Compares `validate` (a validator the build compiled ahead of time) with Ajv compiling `schemas`
   * afresh, on every case: each verdict must be the fixture's, and each list of issues, in the
   * form `issuesOf` gives Ajv's errors, the same.
   */
  function agreesWithFreshAjv(
    schemas: readonly object[],
    validate: (schema: string, instance: unknown) => unknown[] | null,
    issuesOf: (errors: ErrorObject[]) => unknown[],
  ): void {
    const ajv = new Ajv2020({ strict: true, keywords: ['since'], allErrors: true, discriminator: true });
    addFormats.default(ajv);
    for (const schema of schemas) ajv.addSchema(schema);
    const differ: string[] = [];
    const got = cases.map((c) => {
      const compiled = validate(c.schema, c.instance);
      const fresh = ajv.getSchema(`https://schemas.tap-protocol.org/v1/${c.schema}`)!;
      const issues = fresh(c.instance) ? null : issuesOf(fresh.errors ?? []);
      if (JSON.stringify(compiled) !== JSON.stringify(issues))
        differ.push(`${c.label}: ${JSON.stringify(compiled)} ≠ ${JSON.stringify(issues)}`);
      return compiled === null;
    });
    expect(disagreements(got)).toEqual([]);
    expect(differ).toEqual([]);
  }

  it('the validators the build compiled ahead of time (reference/core) give every verdict and every issue Ajv gives compiling the files', () => {
    agreesWithFreshAjv(SCHEMA_BUNDLE, (schema, instance) => validateAgainst(schema as never, instance), toIssues);
  });

  it("tap-conform's validators, compiled by the build from the published files, give every verdict and every issue Ajv gives compiling those files", () => {
    const dir = join(ROOT, 'schemas/v1');
    const published = readdirSync(dir)
      .filter((n) => n.endsWith('.schema.json'))
      .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as object);
    // The harness's own form of an issue (conformance/schemas.ts).
    agreesWithFreshAjv(published, validateWithHarness, (errors) =>
      errors.map((e) => ({ path: e.instancePath || '/', keyword: e.keyword, message: e.message ?? e.keyword })),
    );
  });

  it(
    'refuses the bypasses in every validator: a line feed before "..", a trailing line feed, "yesterday Z", a space for "T"',
    async () => {
      for (const [name, judge] of judges)
        for (const loading of ['files', 'bundle'] as const)
          expect(judge(loading)(bypasses), `${name} (${loading})`).toEqual(bypasses.map(() => false));
      if (pythonProblem) expect.fail(pythonProblem);
      for (const loading of ['files', 'bundle'] as const)
        expect((await pythonRuns.get(loading)!).bypasses, `${PYTHON_NAME} (${loading})`).toEqual(bypasses.map(() => false));
    },
    PYTHON_TIMEOUT_MS,
  );
});

function recordWithArtifact(path: string): unknown {
  const record = structuredClone(workspaceFixtures().valid[0]!.value) as { context: { history: { artifacts: string[] }[] } };
  record.context.history[0]!.artifacts = [path];
  return record;
}
