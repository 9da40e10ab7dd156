/**
 * The input check of a capability (spec: tasks#acceptance): a schema published in schemas/v1
 * (it carries that $id) uses the validator the build compiled ahead of time; any other schema is
 * compiled here, with Ajv loaded only when an agent declares one, so an agent whose inputs are
 * all published schemas never loads a schema compiler.
 */
import { createRequire } from 'node:module';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import { hasValidator, SCHEMA_BASE, toIssues, validatorFor, type Issue } from '../core/validate.ts';
import type { SchemaFile } from '../core/schema-bundle.ts';

/** The check of one input: null when valid, else its issues. */
export type InputValidator = (input: unknown) => Issue[] | null;

let compiler: Ajv2020 | undefined;

/** One Ajv instance for the capability schemas of this process, created on first need. */
function ajv(): Ajv2020 {
  if (!compiler) {
    const load = createRequire(import.meta.url);
    const { Ajv2020: Ajv } = load('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js');
    const addFormats = load('ajv-formats') as typeof import('ajv-formats').default;
    compiler = new Ajv({ strict: false, allErrors: true });
    addFormats(compiler);
  }
  return compiler;
}

/** The validator of a capability's input schema; throws, naming the capability, when the schema does not compile. */
export function inputValidator(capability: string, schema: Record<string, unknown>): InputValidator {
  const id = typeof schema.$id === 'string' ? schema.$id : '';
  if (id.startsWith(SCHEMA_BASE) && hasValidator(id.slice(SCHEMA_BASE.length))) {
    return validatorFor(id.slice(SCHEMA_BASE.length) as SchemaFile);
  }
  try {
    const fn = ajv().compile(schema);
    return (input) => (fn(input) ? null : toIssues(fn.errors ?? []));
  } catch (err) {
    throw new Error(`the input schema of capability ${capability} does not compile: ${(err as Error).message}`);
  }
}
