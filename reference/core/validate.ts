/**
 * Validators compiled ahead of time from the emitted JSON Schema files (schemas/v1) by the build
 * (tools/emit-validators.ts, Ajv standalone code), so no schema is compiled at start-up; failures
 * become Issue lists rather than exceptions (spec: messages#payload-validation).
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import { isKnownType } from './catalogue.ts';
import { surelyValidBody, surelyValidEnvelope } from './fast-accept.ts';
import type { SchemaFile } from './schema-bundle.ts';
import { QUICK, VALIDATORS } from './validators.generated.js';

/** One schema violation: where (a JSON Pointer into the value), which keyword failed, and a sentence for people. */
export interface Issue {
  path: string;
  keyword: string;
  message: string;
}

/** A compiled check: null when the value is valid, else its issues. */
export type Validator = (value: unknown) => Issue[] | null;

/** The base every schema $id starts with; $refs between files are relative to it (spec: envelope#fields). */
export const SCHEMA_BASE = 'https://schemas.tap-protocol.org/v1/';

const cache = new Map<string, Validator>();

/**
 * Wraps a compiled function once per file name. Where a quick check exists (the envelope and
 * each body variant), a valid value costs only the quick check; the full validator, which
 * collects every error, runs only to name the issues of an invalid one.
 */
function wrapped(file: string): Validator {
  let v = cache.get(file);
  if (!v) {
    if (!hasValidator(file))
      throw new Error(`no validator for ${file}: it is not a schema in schemas/v1 (run npm run build after changing them)`);
    const quick: ValidateFunction | undefined = QUICK[file];
    // The full validators' code runs when one is first asked for (validators.generated.js).
    const full = (value: unknown) => {
      const fn: ValidateFunction = VALIDATORS[file]!;
      return fn(value) ? null : toIssues(fn.errors ?? []);
    };
    v = quick ? (value) => (quick(value) ? null : full(value)) : full;
    cache.set(file, v);
  }
  return v;
}

/** The full validator of a file, never its quick check: for tests that compare the two. */
export function fullValidatorFor(file: string): Validator {
  const fn: ValidateFunction | undefined = VALIDATORS[file];
  if (!fn) throw new Error(`no validator for ${file}: it is not a schema in schemas/v1 (run npm run build after changing them)`);
  return (value) => (fn(value) ? null : toIssues(fn.errors ?? []));
}

/** True when a schema file has a validator compiled ahead of time, under this file name. */
export function hasValidator(file: string): boolean {
  return Object.hasOwn(VALIDATORS, file);
}

/** The validator of one schema file, e.g. "agent-card.schema.json" (spec: messages#payload-validation). */
export function validatorFor(schemaFile: SchemaFile): Validator {
  return wrapped(schemaFile);
}

/** Validates a value against one schema file (spec: messages#payload-validation). */
export function validateAgainst(schemaFile: SchemaFile, value: unknown): Issue[] | null {
  return validatorFor(schemaFile)(value);
}

/** Validates the envelope every message shares, including the rule that "*" targets only handshake.init (spec: envelope#fields). */
export function validateEnvelope(value: unknown): Issue[] | null {
  if (typeof value === 'object' && value !== null && surelyValidEnvelope(value as Record<string, unknown>)) return null;
  return validatorFor('envelope.schema.json')(value);
}

/**
 * Validates a whole message against its type's schema (envelope, per-type required members and
 * payload). A type outside the catalogue is one issue at /type; callers that must answer
 * UNKNOWN_MESSAGE_TYPE check the type first (spec: messages#payload-validation).
 */
export function validateMessage(value: unknown): Issue[] | null {
  const type = (value as { type?: unknown } | null)?.type;
  if (typeof type !== 'string' || !isKnownType(type)) {
    return [{ path: '/type', keyword: 'discriminator', message: `${JSON.stringify(type)} is not a TAP 1.0 message type` }];
  }
  return validatorFor(`${type}.schema.json` as SchemaFile)(value);
}

/**
 * Validates a message whose envelope `decodeFrame` has already checked: its type's schema without
 * the `allOf` that repeats the envelope, compiled from the same emitted file, so each received
 * message is checked against the envelope once. Issues are those `validateMessage` would give for
 * a message with a valid envelope (spec: messages#payload-validation).
 */
export function validateDecoded(value: unknown): Issue[] | null {
  const type = (value as { type?: unknown } | null)?.type;
  if (typeof value === 'object' && value !== null && surelyValidBody(value as Record<string, unknown>)) return null;
  if (typeof type !== 'string' || !isKnownType(type)) return validateMessage(value);
  return wrapped(`${type}.body.schema.json`)(value);
}

/** Validates a payload against the payload schema of its message type (spec: messages#payload-validation). */
export function validatePayload(type: string, payload: unknown): Issue[] | null {
  if (!isKnownType(type)) {
    return [{ path: '', keyword: 'discriminator', message: `${JSON.stringify(type)} is not a TAP 1.0 message type` }];
  }
  return validatorFor(`${type}.payload.schema.json` as SchemaFile)(payload);
}

/**
 * Ajv errors as issues: a missing member is reported at its own path, the bookkeeping errors of
 * if/then/else are dropped when the failure beneath them is reported, and repeats are merged.
 */
export function toIssues(errors: readonly ErrorObject[]): Issue[] {
  const out: Issue[] = [];
  const seen = new Set<string>();
  const substantive = errors.some((e) => e.keyword !== 'if');
  for (const e of errors) {
    if (e.keyword === 'if' && substantive) continue;
    let path = e.instancePath;
    if (e.keyword === 'required') path += '/' + escapePointer(String((e.params as { missingProperty: string }).missingProperty));
    const issue = { path, keyword: e.keyword, message: e.message ?? e.keyword };
    const key = `${issue.path}\u0000${issue.keyword}\u0000${issue.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(issue);
  }
  return out;
}

/** Issues as one line for people: "/path message; /path message" ("/" for the whole value). */
export function issueList(issues: readonly Issue[]): string {
  return issues.map((i) => `${i.path || '/'} ${i.message}`).join('; ');
}

/** Escapes one JSON Pointer token (RFC 6901). */
export function escapePointer(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}
