/**
 * Three JSON Schema validators that no one here wrote, each loading the TAP schemas offline
 * either as the separate files of schemas/v1 or as the single bundle.json: Ajv, @cfworker/json-schema
 * and Debian's python3-jsonschema (through tools/jsonschema-verdicts.py). Used by
 * test/cross-validators.process.test.ts to require identical verdicts.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Validator } from '@cfworker/json-schema';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { ROOT, SCHEMAS } from '../tools/validate-fixtures.ts';

const ID_BASE = 'https://schemas.tap-protocol.org/v1/';
export const PYTHON = '/usr/bin/python3';
const PY_SCRIPT = join(ROOT, 'tools/jsonschema-verdicts.py');

/** One instance and the schema file (of schemas/v1) it is checked against. */
export interface Case {
  label: string;
  schema: string;
  instance: unknown;
}
export type Loading = 'files' | 'bundle';
/** Validates every case; true where the instance is valid. */
export type Judge = (cases: readonly Case[]) => boolean[];

const read = (f: string) => JSON.parse(readFileSync(join(SCHEMAS, f), 'utf8')) as { $id: string };
const schemaFiles = () => readdirSync(SCHEMAS).filter((n) => n.endsWith('.schema.json'));
const loaded = (loading: Loading) => (loading === 'files' ? schemaFiles().map(read) : [read('bundle.json')]);

/** Ajv 2020-12 with the options schemas/README.md gives: strict, discriminator, ajv-formats. */
export function ajvJudge(loading: Loading): Judge {
  const ajv = new Ajv2020({ strict: true, allErrors: true, discriminator: true, keywords: ['since'] });
  addFormats.default(ajv);
  for (const s of loaded(loading)) ajv.addSchema(s);
  return (cases) =>
    cases.map((c) => {
      const validate = ajv.getSchema(ID_BASE + c.schema);
      if (!validate) throw new Error(`Ajv (${loading}) cannot find ${ID_BASE + c.schema}`);
      return validate(c.instance) as boolean;
    });
}

/** @cfworker/json-schema, draft 2020-12, every schema added by its $id (formats asserted, as it does by default). */
export function cfworkerJudge(loading: Loading): Judge {
  const validators = new Map<string, Validator>();
  const schemas = loaded(loading);
  return (cases) =>
    cases.map((c) => {
      let v = validators.get(c.schema);
      if (!v) {
        v = new Validator({ $ref: ID_BASE + c.schema }, '2020-12', false);
        for (const s of schemas) v.addSchema(s as never);
        validators.set(c.schema, v);
      }
      return v.validate(c.instance).valid;
    });
}

/** Why Debian's python3-jsonschema cannot run here, or null when it can. */
export function pythonMissing(): string | null {
  if (!existsSync(PYTHON))
    return `${PYTHON} is missing: install Debian's python3 and python3-jsonschema (apt-get install -y python3-jsonschema)`;
  const probe = spawnSync(PYTHON, ['-c', 'import jsonschema'], { encoding: 'utf8' });
  if (probe.status !== 0)
    return `${PYTHON} has no jsonschema module: install it with \`apt-get install -y python3-jsonschema\` (${probe.stderr.trim()})`;
  return null;
}

/** The request tools/jsonschema-verdicts.py reads on stdin. */
const pythonRequest = (loading: Loading, cases: readonly Case[]) =>
  JSON.stringify({ schemas: SCHEMAS, bundle: loading === 'bundle', cases: cases.map(({ schema, instance }) => ({ schema, instance })) });

const pythonValid = (loading: Loading, status: number | null, stdout: string, stderr: string): boolean[] => {
  if (status !== 0) throw new Error(`tools/jsonschema-verdicts.py (${loading}) failed (exit ${status}): ${stderr.trim()}`);
  return (JSON.parse(stdout) as { valid: boolean }[]).map((x) => x.valid);
};

/** python-jsonschema (Debian's python3-jsonschema) in one child process per call; formats not asserted. */
export function pythonJudge(loading: Loading): Judge {
  return (cases) => {
    const r = spawnSync(PYTHON, [PY_SCRIPT], { input: pythonRequest(loading, cases), encoding: 'utf8', maxBuffer: 64 << 20 });
    return pythonValid(loading, r.status, r.stdout, r.stderr);
  };
}

/** The verdicts of pythonJudge, from a child process that runs while this one goes on with other work. */
export function pythonVerdicts(loading: Loading, cases: readonly Case[]): Promise<boolean[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, [PY_SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => {
      try {
        resolve(pythonValid(loading, code, stdout, stderr));
      } catch (err) {
        reject(err);
      }
    });
    child.stdin.end(pythonRequest(loading, cases));
  });
}

/** The message examples of asyncapi.yaml (parsed), each as a case against the schema file its payload names. */
export function exampleCases(doc: {
  components: { messages: Record<string, { examples?: { name: string; payload: unknown }[] }> };
}): Case[] {
  return Object.entries(doc.components.messages).flatMap(([type, m]) =>
    (m.examples ?? []).map((ex) => ({ label: `${type} example ${ex.name}`, schema: `${type}.schema.json`, instance: ex.payload })),
  );
}
