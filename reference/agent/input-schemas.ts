/**
 * The input check of a capability (spec: tasks#acceptance): a schema published in schemas/v1
 * (it carries that $id) uses the validator the build compiled ahead of time; any other schema is
 * compiled here, with Ajv (bundled by the build, validators.generated.js) loaded only when an
 * agent declares one, so an agent whose inputs are all published schemas never loads a schema
 * compiler.
 */
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';
import { hasValidator, SCHEMA_BASE, toIssues, validatorFor, type Issue } from '../core/validate.ts';
import { META_SCHEMA, META_SCHEMAS, schemaCompiler } from '../core/validators.generated.js';
import type { SchemaFile } from '../core/schema-bundle.ts';
import { isIntegerText, numberTextAt } from '../core/number-forms.ts';

/**
 * The check of one input: null when valid, else its issues. `text`, the task.request as it came,
 * lets a conformance capability's input be checked for integers written with a fraction or an
 * exponent, which the parsed value no longer shows (spec: conformance#input-forms).
 */
export type InputValidator = (input: unknown, text?: string) => Issue[] | null;

/** The published input forms of the conformance capabilities, whose integers have no fraction or exponent (spec: conformance#input-forms). */
const CONFORMANCE_INPUT = /^tap\.test\.[a-z]+\.input\.schema\.json$/;

let compiler: Ajv2020 | undefined;

/** One Ajv instance for the capability schemas of this process, created on first need. */
function ajv(): Ajv2020 {
  if (!compiler) {
    const { Ajv2020: Ajv, addFormats } = schemaCompiler();
    // The schema is checked against the meta-schema first, by the validator the build compiled
    // (compile()): Ajv would compile the meta-schema itself, some 40 ms at every agent's start.
    compiler = new Ajv({ strict: false, allErrors: true, validateSchema: false });
    addFormats(compiler);
  }
  return compiler;
}

/**
 * Compiles a schema an agent brings. It must be a JSON Schema 2020-12 document, checked by the
 * meta-schema validator compiled ahead of time; a schema that names another `$schema` is checked
 * by Ajv itself, which refuses the drafts it does not hold.
 */
function compile(schema: Record<string, unknown> | boolean): ValidateFunction {
  const declared = typeof schema === 'object' ? schema.$schema : undefined;
  if (declared === undefined || declared === META_SCHEMA || declared === `${META_SCHEMA}#`) {
    const meta = META_SCHEMAS[META_SCHEMA]!;
    // The message Ajv's own check of a schema gives (validateSchema): "schema is invalid: data/minLength must be >= 0".
    if (!meta(schema)) throw new Error(`schema is invalid: ${ajv().errorsText(meta.errors)}`);
  } else {
    ajv().validateSchema(schema, true);
  }
  return ajv().compile(schema);
}

/** The validator of a capability's input schema; throws, naming the capability, when the schema does not compile. */
export function inputValidator(capability: string, schema: Record<string, unknown>): InputValidator {
  const id = typeof schema.$id === 'string' ? schema.$id : '';
  const file = id.startsWith(SCHEMA_BASE) ? id.slice(SCHEMA_BASE.length) : '';
  if (hasValidator(file)) {
    const validate = validatorFor(file as SchemaFile);
    return CONFORMANCE_INPUT.test(file) ? integerForms(validate, integerMembers(schema)) : validate;
  }
  try {
    const fn = compile(schema);
    return (input) => (fn(input) ? null : toIssues(fn.errors ?? []));
  } catch (err) {
    throw new Error(`the input schema of capability ${capability} does not compile: ${(err as Error).message}`);
  }
}

/** The top-level members a schema types as integers. */
function integerMembers(schema: Record<string, unknown>): string[] {
  const properties = (schema.properties ?? {}) as Record<string, { type?: unknown }>;
  return Object.keys(properties).filter((name) => properties[name]?.type === 'integer');
}

/** `validate`, then: each of `members` written as a number with a fraction or an exponent is refused (spec: conformance#input-forms). */
function integerForms(validate: InputValidator, members: string[]): InputValidator {
  if (members.length === 0) return validate;
  return (input, text) => {
    const issues = validate(input);
    if (issues || text === undefined || typeof input !== 'object' || input === null) return issues;
    for (const name of members) {
      if (typeof (input as Record<string, unknown>)[name] !== 'number') continue;
      const written = numberTextAt(text, ['payload', 'input', name]);
      if (written !== undefined && !isIntegerText(written)) {
        return [
          { path: `/${name}`, keyword: 'type', message: `must be an integer written without a fraction or exponent, not ${written}` },
        ];
      }
    }
    return null;
  };
}

/**
 * The check of an answer against the schema of an input request (spec: tasks#input-response):
 * null when it matches, else its issues. Throws when the schema does not compile, as one with a
 * remote $ref does: no schema is fetched.
 */
export function answerValidator(schema: Record<string, unknown> | boolean): (answer: unknown) => Issue[] | null {
  const fn = compile(schema);
  return (answer) => (fn(answer) ? null : toIssues(fn.errors ?? []));
}
