/**
 * The input check of a capability (spec: tasks#acceptance): a schema published in schemas/v1
 * (it carries that $id) uses the validator the build compiled ahead of time; any other schema is
 * checked at once against the meta-schema and compiled here, with Ajv (bundled by the build,
 * validators.generated.js) loaded only when a schema is compiled: an agent whose inputs are all
 * published schemas never loads a schema compiler.
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
    // (checkSchema()): Ajv would compile the meta-schema itself, some 40 ms at every agent's start.
    compiler = new Ajv({ strict: false, allErrors: true, validateSchema: false });
    addFormats(compiler);
  }
  return compiler;
}

/**
 * Checks a schema an agent brings. It must be a JSON Schema 2020-12 document, checked by the
 * meta-schema validator compiled ahead of time; a schema that names another `$schema` is checked
 * by Ajv itself, which refuses the drafts it does not hold.
 */
function checkSchema(schema: Record<string, unknown> | boolean): void {
  const declared = typeof schema === 'object' ? schema.$schema : undefined;
  if (declared === undefined || declared === META_SCHEMA || declared === `${META_SCHEMA}#`) {
    const meta = META_SCHEMAS[META_SCHEMA]!;
    // The message Ajv's own check of a schema gives (validateSchema): "schema is invalid: data/minLength must be >= 0".
    if (!meta(schema)) throw new Error(`schema is invalid: ${ajv().errorsText(meta.errors)}`);
  } else {
    ajv().validateSchema(schema, true);
  }
}

/** Checks and compiles a schema an agent brings. */
function compile(schema: Record<string, unknown> | boolean): ValidateFunction {
  checkSchema(schema);
  return ajv().compile(schema);
}

/**
 * What can make a schema that passed the meta-schema fail to compile: a reference to resolve
 * (`$ref`, `$dynamicRef`), an `$id` or anchor another schema of the process may hold already, a
 * regular expression (`pattern`, `patternProperties`), another draft (`$schema`). Read from the
 * schema's JSON text, where each member name is written in quotes before a colon; a value that
 * only looks like one makes the schema compile at once, which is never wrong.
 */
const MAY_FAIL_TO_COMPILE = /"(?:\$ref|\$dynamicRef|\$id|\$anchor|\$dynamicAnchor|\$schema|pattern|patternProperties)":/;

/**
 * A check of inputs by a schema an agent brings: checked against the meta-schema now, and
 * compiled now when compiling may fail (MAY_FAIL_TO_COMPILE), so that the agent does not start
 * with a schema it cannot use. Any other schema is compiled, from a copy taken now, when its first
 * input is checked: a stdio agent starts for one session, and most sessions of a certification
 * never ask for the capability; the compiler is some 20 ms of such a start.
 */
function compileWhenUsed(schema: Record<string, unknown>): () => ValidateFunction {
  const text = JSON.stringify(schema);
  if (MAY_FAIL_TO_COMPILE.test(text)) {
    const fn = compile(schema);
    return () => fn;
  }
  checkSchema(schema);
  const copy = JSON.parse(text) as Record<string, unknown>;
  let fn: ValidateFunction | undefined;
  return () => (fn ??= ajv().compile(copy));
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
    const compiled = compileWhenUsed(schema);
    return (input) => {
      const fn = compiled();
      return fn(input) ? null : toIssues(fn.errors ?? []);
    };
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
